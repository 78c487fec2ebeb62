// The app shell: sign-in gate, navigation, and one page per route (pages/*.tsx).
import { lazy, Suspense, useEffect, useState, type ReactNode } from 'react';
import { ApiError, client, errorText, type Principal } from './api.js';
import { Link, RouterProvider, useRoute } from './router.js';
import { SessionContext } from './session.js';
import { SignInPage } from './pages/sign-in.js';
import { FleetPage } from './pages/fleet.js';
import { JobsPage } from './pages/jobs.js';
import { JobPage } from './pages/job.js';
import { RunJobPage } from './pages/run-job.js';
import { SettingsPage } from './pages/settings.js';
import { RunnerPage } from './pages/runner.js';
import { TasksPage } from './pages/tasks.js';
import { TaskPage } from './pages/task.js';

/** The costs page carries the chart library (uPlot): loaded when first opened, so the other pages' first load skips it. */
const CostsPage = lazy(() => import('./pages/costs.js').then((m) => ({ default: m.CostsPage })));

/**
 * Routes. Add a page: a file in pages/, one line here, one in NAV (issues 5/3/…: runner page,
 * tasks, top-up slot in the same way).
 */
function page(path: string): ReactNode {
  let m: RegExpExecArray | null;
  if (path === '/' || path === '/fleet') return <FleetPage />;
  if (path === '/jobs') return <JobsPage />;
  if ((m = /^\/runners\/(\d+)$/.exec(path))) return <RunnerPage id={Number(m[1])} />;
  if ((m = /^\/jobs\/(\d+)$/.exec(path))) return <JobPage id={Number(m[1])} />;
  if (path === '/run') return <RunJobPage />;
  if (path === '/costs') return <CostsPage />;
  if (path === '/tasks') return <TasksPage />;
  if ((m = /^\/tasks\/(\d+)$/.exec(path))) return <TaskPage id={Number(m[1])} />;
  if (path === '/settings') return <SettingsPage />;
  return <p className="empty">No page at {path}.</p>;
}

const NAV: Array<[string, string]> = [
  ['/', 'Fleet'],
  ['/jobs', 'Jobs'],
  ['/tasks', 'Tasks'],
  ['/costs', 'Costs'],
  ['/settings', 'Settings'],
];

function Shell({ principal, onSignOut }: { principal: Principal; onSignOut: () => void }) {
  const { path } = useRoute();
  const isAdmin = principal.role === 'admin';
  const active = (to: string) => (to === '/' ? path === '/' || path === '/fleet' || path.startsWith('/runners/') : path.startsWith(to));
  return (
    <SessionContext.Provider value={{ principal, isAdmin, signOut: onSignOut }}>
      <header className="top">
        <span className="brand">Flotilla</span>
        <nav>
          {NAV.map(([to, label]) => (
            <Link key={to} to={to} className={active(to) ? 'on' : ''}>
              {label}
            </Link>
          ))}
        </nav>
        <span className="who" data-testid="who">
          {principal.name} <span className={`role role-${principal.role}`}>{principal.role}</span>
          <button className="link" onClick={onSignOut}>
            Sign out
          </button>
        </span>
      </header>
      <main>
        <Suspense fallback={<p className="empty">Loading…</p>}>{page(path)}</Suspense>
      </main>
    </SessionContext.Provider>
  );
}

export function App() {
  const [principal, setPrincipal] = useState<Principal | null>(null);
  const [state, setState] = useState<'loading' | 'in' | 'out' | 'error'>('loading');
  const [problem, setProblem] = useState('');
  useEffect(() => {
    client.session().then(
      (s) => {
        setPrincipal(s.principal);
        setState('in');
      },
      (e: unknown) => {
        if (e instanceof ApiError && e.status === 401) setState('out');
        else {
          setProblem(errorText(e));
          setState('error');
        }
      },
    );
    const out = () => setState('out');
    window.addEventListener('flotilla:signed-out', out);
    return () => window.removeEventListener('flotilla:signed-out', out);
  }, []);
  const signOut = () => {
    void client.signOut().finally(() => {
      setPrincipal(null);
      setState('out');
    });
  };
  if (state === 'loading') return <p className="empty">Loading…</p>;
  if (state === 'error') return <p className="error">Cannot reach the server: {problem}</p>;
  if (state === 'out' || !principal)
    return (
      <SignInPage
        onSignedIn={(p) => {
          setPrincipal(p);
          setState('in');
        }}
      />
    );
  return (
    <RouterProvider>
      <Shell principal={principal} onSignOut={signOut} />
    </RouterProvider>
  );
}
