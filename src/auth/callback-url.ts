/**
 * `callbackUrl` (docs/accounts.md): a relative path, or a URL of PUBLIC_URL's origin;
 * anything else falls back. The result is always a path on our origin (`/…`), never
 * an absolute or protocol-relative URL, so a redirect built from it cannot leave.
 */
export function safeCallbackUrl(value: unknown, publicUrl: string, fallback = '/'): string {
  if (typeof value !== 'string' || value.length === 0 || value.length > 2048) return fallback;
  // Browsers drop tabs and newlines inside URLs ("/\t/evil.example" is "//evil.example")
  // and read backslashes as slashes: refuse control characters and backslashes outright.
  if (/[\u0000-\u001f\u007f\\]/.test(value)) return fallback;

  const origin = new URL(publicUrl).origin;
  let url: URL;
  try {
    // A relative value resolves against our origin; an absolute one keeps its own.
    url = new URL(value, `${origin}/`);
  } catch {
    return fallback;
  }
  if (url.origin !== origin || (url.protocol !== 'http:' && url.protocol !== 'https:')) return fallback;
  if (url.username || url.password) return fallback;
  const path = `${url.pathname}${url.search}${url.hash}`;
  // Dot segments can collapse "/..//evil.example" into "//evil.example": never emit that.
  if (!path.startsWith('/') || path.startsWith('//')) return fallback;
  return path;
}
