import { describe, expect, it } from 'vitest';
import { listeningUrl } from '../../src/api/app.ts';

type Addresses = ReturnType<Parameters<typeof listeningUrl>[0]['addresses']>;
const at = (addresses: unknown[]) => ({ addresses: () => addresses as Addresses });

describe("the public URL read from the server's address when PAYHOOKS_PUBLIC_URL is unset (api/app.ts)", () => {
  it('is the bound address; every interface is offered on localhost; IPv6 in brackets', () => {
    expect(listeningUrl(at([{ address: '127.0.0.1', family: 'IPv4', port: 4100 }]))).toBe('http://127.0.0.1:4100');
    expect(listeningUrl(at([{ address: '0.0.0.0', family: 'IPv4', port: 8080 }]))).toBe('http://localhost:8080');
    expect(listeningUrl(at([{ address: '::', family: 'IPv6', port: 8080 }]))).toBe('http://localhost:8080');
    expect(listeningUrl(at([{ address: '::1', family: 'IPv6', port: 9 }]))).toBe('http://[::1]:9');
  });

  it('is unknown before the server listens (the context then falls back to the configured host and port)', () => {
    expect(listeningUrl(at([]))).toBeUndefined();
  });
});
