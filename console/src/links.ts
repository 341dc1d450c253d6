// Links to pages of objects whose ids are per owner: the link names the owner.

/** The console link to `owner`'s run `id` (operation ids are per owner). */
export function runLink(id: string, owner: string): string {
  return `/runs/${encodeURIComponent(id)}?owner=${encodeURIComponent(owner)}`;
}
