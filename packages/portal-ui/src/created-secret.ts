/**
 * The signing secret of the endpoint just created, kept in memory only and taken once by the
 * endpoint page: a reload (or any later visit) can't show it again.
 */
let pending: { id: string; secret: string } | null = null;

export function rememberSecret(id: string, secret: string): void {
  pending = { id, secret };
}

export function takeSecret(id: string): string | null {
  if (pending?.id !== id) return null;
  const { secret } = pending;
  pending = null;
  return secret;
}
