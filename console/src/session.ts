// The signed-in token: in the tab's session storage only (never in a URL, gone with the tab).

/** The session storage key of the bearer token. */
export const TOKEN_KEY = "agentlog.token";

/** The token, or null when signed out. */
export function token(): string | null {
  return sessionStorage.getItem(TOKEN_KEY);
}

const listeners = new Set<() => void>();

/** Call `f` whenever the token changes (sign-in, sign-out, UNAUTHENTICATED). */
export function onTokenChange(f: () => void): () => void {
  listeners.add(f);
  return () => listeners.delete(f);
}

/** Keep `t` as the token. */
export function signIn(t: string): void {
  sessionStorage.setItem(TOKEN_KEY, t);
  listeners.forEach((f) => f());
}

/** Forget the token. */
export function signOut(): void {
  sessionStorage.removeItem(TOKEN_KEY);
  listeners.forEach((f) => f());
}
