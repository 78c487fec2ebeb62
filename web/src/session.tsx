// Who is signed in; pages ask `useSession().isAdmin` to enable admin buttons (the API checks again).
import { createContext, useContext } from 'react';
import type { Principal } from './api.js';

export interface SessionState {
  principal: Principal;
  isAdmin: boolean;
  signOut: () => void;
}

export const SessionContext = createContext<SessionState | null>(null);

export function useSession(): SessionState {
  const s = useContext(SessionContext);
  if (!s) throw new Error('useSession outside the signed-in app');
  return s;
}

/** Title shown on buttons a member cannot press. */
export const ADMIN_ONLY = 'Admins only: members can read but not change anything';
