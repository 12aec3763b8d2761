import './base.css';
import './context.css';
