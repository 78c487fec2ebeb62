import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

const COLORS = ['#2563eb', '#16a34a', '#d97706', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d'];

/**
 * A uPlot time chart: `x` in epoch seconds, one series per name (values in USD). Resizes with
 * its container.
 */
export function TimeChart({ x, series, height = 240 }: { x: number[]; series: Array<{ name: string; values: number[] }>; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const opts: uPlot.Options = {
      width: el.clientWidth || 600,
      height,
      series: [{}, ...series.map((s, i) => ({ label: s.name, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true }, value: (_u: uPlot, v: number | null) => (v == null ? '—' : `$${v.toFixed(4)}`) }))],
      axes: [{}, { values: (_u, vals) => vals.map((v) => `$${v}`) }],
      // One day alone would stretch over years: show at least a week around the data.
      scales: { x: { time: true, range: (_u, min, max) => (max - min < 7 * 86_400 ? [min - 3 * 86_400, max + 3 * 86_400] : [min - 43_200, max + 43_200]) } },
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)], el);
    const ro = new ResizeObserver(() => plot.setSize({ width: el.clientWidth || 600, height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [x, series, height]);
  // The plotted numbers, for tests and people reading the DOM (a canvas has no text).
  return <div ref={box} className="chart" data-testid="chart" data-points={JSON.stringify({ x, series })} />;
}
