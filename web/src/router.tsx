// A small pushState router: one path string, links that do not reload the page.
import { createContext, useContext, useEffect, useState, type MouseEvent, type ReactNode } from 'react';

interface Route {
  path: string;
  query: URLSearchParams;
  go: (to: string) => void;
}

const RouteContext = createContext<Route>({ path: '/', query: new URLSearchParams(), go: () => {} });

/** Provides the current location and `go(to)` to every page. */
export function RouterProvider({ children }: { children: ReactNode }) {
  const [loc, setLoc] = useState(() => window.location.pathname + window.location.search);
  useEffect(() => {
    const on = () => setLoc(window.location.pathname + window.location.search);
    window.addEventListener('popstate', on);
    return () => window.removeEventListener('popstate', on);
  }, []);
  const url = new URL(loc, window.location.origin);
  const go = (to: string) => {
    window.history.pushState(null, '', to);
    setLoc(to);
    window.scrollTo(0, 0);
  };
  return <RouteContext.Provider value={{ path: url.pathname, query: url.searchParams, go }}>{children}</RouteContext.Provider>;
}

export function useRoute(): Route {
  return useContext(RouteContext);
}

/** An `<a>` that navigates in-app (plain clicks) and still opens in a new tab with a modifier. */
export function Link({ to, children, className, title }: { to: string; children: ReactNode; className?: string; title?: string }) {
  const { go } = useRoute();
  const onClick = (e: MouseEvent<HTMLAnchorElement>) => {
    if (e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey) return;
    e.preventDefault();
    go(to);
  };
  return (
    <a href={to} onClick={onClick} className={className} title={title}>
      {children}
    </a>
  );
}
