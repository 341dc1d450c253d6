// How figures are shown.

/** Micro-units as money (`$0.0123`). */
export function cost(micros?: number | null): string {
  return micros == null ? "–" : `$${(micros / 1_000_000).toFixed(4)}`;
}

/** A count with thousands separators. */
export function count(n?: number | null): string {
  return n == null ? "–" : n.toLocaleString("en");
}

/** The time between two instants (`1.2 s`, `3 min`). */
export function duration(from?: string | null, to?: string | null): string {
  if (!from) return "–";
  const ms = (to ? Date.parse(to) : Date.now()) - Date.parse(from);
  if (ms < 1000) return `${ms} ms`;
  if (ms < 60_000) return `${(ms / 1000).toFixed(1)} s`;
  if (ms < 3_600_000) return `${Math.round(ms / 60_000)} min`;
  return `${(ms / 3_600_000).toFixed(1)} h`;
}

/** An instant in the reader's time zone. */
export function when(t?: string | null): string {
  return t ? new Date(t).toLocaleString("en-GB") : "–";
}

/** JSON for a `<pre>`. */
export function pretty(v: unknown): string {
  return JSON.stringify(v, null, 2);
}

/** `url` if a page may link to it (http(s) or relative, as the server enforces), else null. */
export function safeHref(url?: string | null): string | null {
  if (!url || /[\s\u0000-\u001f\u007f-\u009f]/.test(url)) return null;
  const m = /^([^:/?#]*):/.exec(url);
  return !m || /^https?$/i.test(m[1]) ? url : null;
}
