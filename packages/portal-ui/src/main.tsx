import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.tsx';
import { takeFragmentToken } from './fragment.ts';
import { currentPath } from './router.tsx';
import './styles.css';

// A single-use link's token leaves the address bar before anything else runs (the pages take it
// from fragment.ts's memory).
if (['/launch', '/invitation', '/reset-password'].includes(currentPath())) takeFragmentToken();

createRoot(document.getElementById('root')!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
