// The 10-minute short-term loudness plot of one tile (uPlot), fed from the page's history store.
import { useEffect, useRef } from 'preact/hooks';
import uPlot from 'uplot';
import { html } from './html.js';

export function HistoryPlot({ series, target, version, label }) {
  const box = useRef(null);
  const plot = useRef(null);
  useEffect(() => {
    const el = box.current;
    const width = Math.max(200, el.clientWidth);
    const styles = getComputedStyle(document.documentElement);
    const line = styles.getPropertyValue('--plot-line').trim() || '#0072B2';
    const ref = styles.getPropertyValue('--plot-target').trim() || '#E69F00';
    const u = new uPlot(
      {
        width,
        height: 120,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: true }, y: { range: () => [target - 18, target + 9] } },
        axes: [
          { stroke: styles.getPropertyValue('--fg').trim(), grid: { stroke: '#8884' }, size: 28 },
          { stroke: styles.getPropertyValue('--fg').trim(), grid: { stroke: '#8884' }, size: 40, values: (_u, v) => v.map((x) => x.toFixed(0)) },
        ],
        series: [{}, { stroke: line, width: 2, spanGaps: false, points: { show: false } }, { stroke: ref, width: 1, dash: [6, 4], points: { show: false } }],
      },
      [[], [], []],
      el,
    );
    plot.current = u;
    const resize = new ResizeObserver(() => u.setSize({ width: Math.max(200, el.clientWidth), height: 120 }));
    resize.observe(el);
    return () => {
      resize.disconnect();
      u.destroy();
      plot.current = null;
    };
  }, [target]);
  useEffect(() => {
    if (plot.current === null) return;
    plot.current.setData([series.t, series.s, series.t.map(() => target)]);
  }, [version, target]);
  return html`<figure class="history">
    <div ref=${box} role="img" aria-label=${label}></div>
    <figcaption>Short-term loudness, last 10 min (LUFS; dashed: target)</figcaption>
  </figure>`;
}
