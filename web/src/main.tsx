import './zod-config.js';
import { createRoot } from 'react-dom/client';
import { App } from './app.js';
import './style.css';

createRoot(document.getElementById('root')!).render(<App />);
