import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import { usd } from '../format.js';

const COLORS = ['#2563eb', '#16a34a', '#d97706', '#dc2626', '#7c3aed', '#0891b2', '#db2777', '#65a30d'];

const DAY_S = 86_400;
/** The x axis's tick spacings, seconds: 1, 2, 3, 7, 14 or 28 days, the least that leaves room for the labels. */
const DAY_INCRS = [1, 2, 3, 7, 14, 28].map((d) => d * DAY_S);
const MONTHS = ['Jan', 'Feb', 'Mar', 'Apr', 'May', 'Jun', 'Jul', 'Aug', 'Sep', 'Oct', 'Nov', 'Dec'];
/** An axis label of the UTC day holding `sec` (epoch seconds): `Nov 26`. */
const dayLabel = (sec: number) => {
  const d = new Date(sec * 1000);
  return `${MONTHS[d.getUTCMonth()]} ${d.getUTCDate()}`;
};

/**
 * The x range shown, epoch seconds: half a day either side of the days `range` spans (first,
 * last; UTC midnights), else of the data's first and last day, padded to at least a week. Never
 * from uPlot's own auto-range: for one point on a time scale in seconds it adds 86,400 / 1e-3 s
 * (1,000 days), which drew a single day as Feb 2027 – Aug 2029 with the point at the edge.
 */
function xRange(x: readonly number[], range?: readonly [number, number]): [number, number] {
  if (range) return [range[0] - DAY_S / 2, range[1] + DAY_S / 2];
  const first = x[0] ?? 0;
  const last = x[x.length - 1] ?? first;
  const pad = Math.max(DAY_S / 2, (7 * DAY_S - (last - first)) / 2);
  return [first - pad, last + pad];
}

/**
 * A uPlot time chart of days: `x` in epoch seconds (UTC midnights), one series per name
 * (values in USD). `range` = the first and last day the axis shows (epoch seconds), e.g. the
 * costs page's window, so the axis spans it whatever days have data; absent, the data's days.
 * Axis labels (one every 1, 2, 3, 7, 14 or 28 days) and the legend's time are UTC days
 * (`Nov 26`, `2026-11-26`). Resizes with its container. For tests, the element carries the plotted numbers (`data-points`), the x scale
 * uPlot drew (`data-x-range`, [min, max] seconds) and the x axis labels (`data-x-labels`).
 */
export function TimeChart({ x, series, range, height = 240 }: { x: number[]; series: Array<{ name: string; values: number[] }>; range?: [number, number]; height?: number }) {
  const box = useRef<HTMLDivElement>(null);
  const [from, to] = range ?? [NaN, NaN];
  useEffect(() => {
    const el = box.current;
    if (!el) return;
    let labels: string[] = [];
    const shown = xRange(x, Number.isNaN(from) ? undefined : [from, to]);
    const opts: uPlot.Options = {
      width: el.clientWidth || 600,
      height,
      // Ticks at UTC midnights (the days of the series), wherever the browser is.
      tzDate: (ts) => uPlot.tzDate(new Date(ts * 1000), 'Etc/UTC'),
      series: [
        { value: (_u: uPlot, v: number | null) => (v == null ? '—' : new Date(v * 1000).toISOString().slice(0, 10)) },
        ...series.map((s, i) => ({ label: s.name, stroke: COLORS[i % COLORS.length], width: 2, points: { show: true }, value: (_u: uPlot, v: number | null) => (v == null ? '—' : usd(Math.round(v * 1_000_000))) })),
      ],
      axes: [
        {
          // Whole days only (uPlot would tick every few hours across a week).
          incrs: DAY_INCRS,
          values: (_u, splits) => {
            labels = splits.map(dayLabel);
            return labels;
          },
        },
        {
          values: (_u, vals) => vals.map((v) => `$${v}`),
          // wide enough for its longest tick label (uPlot's fixed 50 px cut `$100000` to `00000`)
          size: (_u, vals) => Math.max(50, 16 + 7 * Math.max(0, ...(vals ?? []).map((t) => String(t).length))),
        },
      ],
      scales: { x: { time: true, range: () => shown } },
      hooks: {
        draw: [
          (u) => {
            el.dataset.xRange = JSON.stringify([u.scales.x!.min, u.scales.x!.max]);
            el.dataset.xLabels = JSON.stringify(labels);
          },
        ],
      },
    };
    const plot = new uPlot(opts, [x, ...series.map((s) => s.values)], el);
    const ro = new ResizeObserver(() => plot.setSize({ width: el.clientWidth || 600, height }));
    ro.observe(el);
    return () => {
      ro.disconnect();
      plot.destroy();
    };
  }, [x, series, from, to, height]);
  // The plotted numbers, for tests and people reading the DOM (a canvas has no text).
  return <div ref={box} className="chart" data-testid="chart" data-points={JSON.stringify({ x, series })} />;
}
