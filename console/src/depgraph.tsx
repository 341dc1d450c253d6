// A dependency graph drawn as SVG with a hand-written layered layout: nodes in columns (a
// column per layer), an arrow for each `blocks` dependency (from the blocker to the blocked),
// each node coloured by its status and, when it has a page, a link reached with Tab.

/** A node: `column` is its layer. */
export type GraphNode = { id: string; label: string; status?: string; href?: string; column: number };
/** `from` blocks `to`. */
export type GraphEdge = { from: string; to: string };

const W = 160;
const H = 34;
const GAP_X = 56;
const GAP_Y = 12;

/** Node labels are cut to fit the box; the full text is in its title. */
const fit = (s: string) => (s.length > 17 ? `${s.slice(0, 16)}…` : s);

/** The graph; nothing when it has no nodes. */
export function DepGraph({ nodes, edges, label }: { nodes: GraphNode[]; edges: GraphEdge[]; label: string }) {
  if (nodes.length === 0) return null;
  const rows = new Map<number, number>();
  const at = new Map<string, { x: number; y: number }>();
  for (const n of nodes) {
    const row = rows.get(n.column) ?? 0;
    rows.set(n.column, row + 1);
    at.set(n.id, { x: n.column * (W + GAP_X), y: row * (H + GAP_Y) });
  }
  const width = (Math.max(...nodes.map((n) => n.column)) + 1) * (W + GAP_X) - GAP_X + 2;
  const height = Math.max(...rows.values()) * (H + GAP_Y) - GAP_Y + 2;
  return (
    <div class="depgraph">
      <svg role="group" aria-label={label} viewBox={`-1 -1 ${width} ${height}`} width={width} height={height}>
        <defs>
          <marker id="dep-arrow" viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" orient="auto">
            <path d="M0,0 L10,5 L0,10 z" class="edge-head" />
          </marker>
        </defs>
        {edges.map((e) => {
          const a = at.get(e.from);
          const b = at.get(e.to);
          if (!a || !b) return null;
          const [x1, y1, x2, y2] = [a.x + W, a.y + H / 2, b.x, b.y + H / 2];
          const bend = Math.max(24, Math.abs(x2 - x1) / 2);
          return (
            <path
              key={`${e.from}>${e.to}`}
              class="edge"
              data-edge={`${e.from}>${e.to}`}
              d={`M${x1},${y1} C${x1 + bend},${y1} ${x2 - bend},${y2} ${x2},${y2}`}
              marker-end="url(#dep-arrow)"
            />
          );
        })}
        {nodes.map((n) => {
          const p = at.get(n.id)!;
          const body = (
            <>
              <title>{`${n.label}${n.status ? ` (${n.status})` : ""}`}</title>
              <rect width={W} height={H} rx={4} />
              <text x={8} y={H / 2 + 5}>
                {fit(n.label)}
              </text>
            </>
          );
          const cls = `node s-${n.status ?? "unknown"}`;
          const move = `translate(${p.x},${p.y})`;
          return n.href ? (
            <a key={n.id} href={n.href} class={cls} data-node={n.id} aria-label={`${n.label} ${n.status ?? ""}`.trim()}>
              <g transform={move}>{body}</g>
            </a>
          ) : (
            <g key={n.id} class={cls} transform={move} data-node={n.id}>
              {body}
            </g>
          );
        })}
      </svg>
    </div>
  );
}
