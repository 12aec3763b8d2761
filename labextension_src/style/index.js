import './base.css';
import './context.css';
import './workflow.css';
import './review.css';
import './knowledge.css';
import './sent.css';
import './panel.css';
