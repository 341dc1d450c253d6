// Client-side routes over the History API (the server answers every console route with the
// same page).
import { useEffect, useState } from "preact/hooks";

const listeners = new Set<() => void>();

/** Go to `path` without a page load. */
export function navigate(path: string): void {
  history.pushState(null, "", path);
  listeners.forEach((f) => f());
}

/** The current path and query, re-rendered on navigation. */
export function useLocation(): URL {
  const [, set] = useState(0);
  useEffect(() => {
    const f = () => set((n) => n + 1);
    listeners.add(f);
    window.addEventListener("popstate", f);
    return () => {
      listeners.delete(f);
      window.removeEventListener("popstate", f);
    };
  }, []);
  return new URL(location.href);
}

/** A link that navigates in the page (a normal link with modifier keys). */
export function onLink(e: MouseEvent): void {
  const a = (e.target as Element).closest("a");
  if (!a || e.defaultPrevented || e.button !== 0 || e.metaKey || e.ctrlKey || e.shiftKey || e.altKey) return;
  const href = a.getAttribute("href");
  if (!href || !href.startsWith("/") || a.hasAttribute("data-external")) return;
  e.preventDefault();
  navigate(href);
}
