// Analytics: cost and tokens over time, split by agent, model or provider (charts drawn by
// uPlot), duration percentiles and why runs ended — over finished runs, live.
import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";
import "uplot/dist/uPlot.min.css";
import { useLiveEvents, useQuery } from "../api";
import { cost, count } from "../format";
import { navigate, useLocation } from "../router";

const REPORT = `query($input: AnalyticsInput) {
  analytics(input: $input) {
    buckets { bucketStart userId agentId model provider figures { runs inputTokens outputTokens totalTokens costMicros } }
    total { runs inputTokens outputTokens totalTokens costMicros completionReasons duration { count meanMs p50Ms p95Ms p99Ms maxMs } }
  }
}`;
const DIMENSIONS: Record<string, string> = { AGENT: "agentId", MODEL: "model", PROVIDER: "provider" };
const COLOURS = ["#0b5cd6", "#c2410c", "#1b7a3a", "#7c3aed", "#b3261e", "#0e7490", "#a16207", "#be185d"];

/** One chart: a series per group over the buckets' times. */
function Chart({ title, times, series, unit }: { title: string; times: number[]; series: [string, (number | null)[]][]; unit: (v: number) => string }) {
  const el = useRef<HTMLDivElement>(null);
  useEffect(() => {
    if (!el.current || times.length === 0) return;
    const width = Math.min(el.current.clientWidth || 600, 900);
    const plot = new uPlot(
      {
        title,
        width,
        height: 240,
        // One bucket alone would stretch the time axis over years: show an hour either side.
        scales: { x: { time: true, range: (_: uPlot, min: number, max: number) => (min === max ? [min - 3600, max + 3600] : [min, max]) } },
        series: [{}, ...series.map(([label], i) => ({ label, stroke: COLOURS[i % COLOURS.length], width: 2, value: (_: uPlot, v: number | null) => (v == null ? "–" : unit(v)) }))],
        axes: [{}, { values: (_: uPlot, ticks: number[]) => ticks.map(unit), size: 70 }],
      },
      [times, ...series.map(([, values]) => values)] as uPlot.AlignedData,
      el.current,
    );
    return () => plot.destroy();
  }, [title, JSON.stringify(times), JSON.stringify(series)]);
  return <div ref={el} class="chart" role="img" aria-label={title} />;
}

/** The Analytics page. */
export function Analytics() {
  const url = useLocation();
  const granularity = url.searchParams.get("granularity") ?? "HOUR";
  const by = url.searchParams.get("by") ?? "AGENT";
  const q = useQuery(REPORT, { input: { granularity, groupBy: [by] } });
  useLiveEvents({ eventTypes: ["operation.completed", "operation.failed", "operation.cancelled"] }, () => q.reload());
  const set = (k: string, v: string) => {
    const p = new URLSearchParams(url.search);
    p.set(k, v);
    navigate(`/analytics?${p}`);
  };
  const report = q.data?.analytics;
  const key = DIMENSIONS[by];
  // An agent id is its owner's: in the admin's report two users' `a1` are two series.
  const label = (b: any): string => (key === "agentId" && b.userId && b.agentId ? `${b.userId}/${b.agentId}` : (b[key] ?? "–"));
  const times = [...new Set<number>((report?.buckets ?? []).map((b: any) => Date.parse(b.bucketStart) / 1000))].sort((a, b) => a - b);
  const groups = [...new Set<string>((report?.buckets ?? []).map(label))];
  const column = (figure: "costMicros" | "totalTokens") =>
    groups.map((g): [string, (number | null)[]] => [
      g,
      times.map((t) => {
        const b = report.buckets.find((b: any) => Date.parse(b.bucketStart) / 1000 === t && label(b) === g);
        if (!b) return null;
        const f = b.figures;
        // Runs that reported only prompt and completion tokens count their sum.
        if (figure === "totalTokens" && f.totalTokens == null && (f.inputTokens != null || f.outputTokens != null))
          return (f.inputTokens ?? 0) + (f.outputTokens ?? 0);
        return f[figure] ?? null;
      }),
    ]);
  const d = report?.total.duration;
  return (
    <section>
      <h1>Analytics</h1>
      <form class="filters" aria-label="Report">
        <label>
          Buckets
          <select value={granularity} onChange={(e) => set("granularity", (e.target as HTMLSelectElement).value)}>
            <option value="HOUR">hour</option>
            <option value="DAY">day</option>
          </select>
        </label>
        <label>
          By
          <select value={by} onChange={(e) => set("by", (e.target as HTMLSelectElement).value)}>
            <option value="AGENT">agent</option>
            <option value="MODEL">model</option>
            <option value="PROVIDER">provider</option>
          </select>
        </label>
      </form>
      {q.error && <p role="alert" class="error">{q.error.message}</p>}
      {report && (
        <>
          <dl class="facts" aria-label="Totals">
            <dt>Runs finished</dt>
            <dd data-total-runs>{report.total.runs}</dd>
            <dt>Cost</dt>
            <dd>{cost(report.total.costMicros)}</dd>
            <dt>Tokens</dt>
            <dd>
              {count(report.total.totalTokens)} <small>({count(report.total.inputTokens)} in, {count(report.total.outputTokens)} out)</small>
            </dd>
            <dt>Duration</dt>
            <dd>
              p50 {count(d.p50Ms)} ms · p95 {count(d.p95Ms)} ms · p99 {count(d.p99Ms)} ms · max {count(d.maxMs)} ms
            </dd>
          </dl>
          {times.length === 0 ? (
            <p>No finished runs yet.</p>
          ) : (
            <>
              <Chart title="Cost" times={times} series={column("costMicros")} unit={(v) => cost(v)} />
              <Chart title="Tokens" times={times} series={column("totalTokens")} unit={(v) => count(v)} />
            </>
          )}
          <h2>How runs ended</h2>
          <div class="scroll">
          <table>
            <tbody>
              {Object.entries(report.total.completionReasons as Record<string, number>).map(([reason, n]) => (
                <tr key={reason}>
                  <td>{reason}</td>
                  <td class="num">{n}</td>
                </tr>
              ))}
            </tbody>
          </table>
          </div>
        </>
      )}
    </section>
  );
}
