import './base.css';
import './context.css';
import './workflow.css';
import './knowledge.css';
