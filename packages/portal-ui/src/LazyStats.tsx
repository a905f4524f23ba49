import { lazy, Suspense, type ComponentProps } from 'react';
import { Loading } from './ui.tsx';

/**
 * The charts (StatsPanel.tsx, with Recharts) load with the first page that shows them: the
 * chart library is most of their weight, and sign-in, the log and the settings don't need it.
 */
const Panel = lazy(() => import('./StatsPanel.tsx').then((m) => ({ default: m.StatsPanel })));
const Table = lazy(() => import('./StatsPanel.tsx').then((m) => ({ default: m.EndpointHealthTable })));

export function LazyStatsPanel(props: ComponentProps<typeof Panel>) {
  return (
    <Suspense fallback={<Loading />}>
      <Panel {...props} />
    </Suspense>
  );
}

export function LazyEndpointHealthTable(props: ComponentProps<typeof Table>) {
  return (
    <Suspense fallback={<Loading />}>
      <Table {...props} />
    </Suspense>
  );
}
