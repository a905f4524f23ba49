import { execFileSync } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * A private PKI made with openssl (the Debian package) in `dir`, for tests and benchmarks that
 * need a receiver on a private CA or a client certificate: EC P-256 keys, a day's validity.
 */
const openssl = (args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
const EC = ['-newkey', 'ec', '-pkeyopt', 'ec_paramgen_curve:prime256v1', '-nodes'];

export interface Issued {
  key: string;
  cert: string;
}

/** A certificate authority named `name` (CN); returns its certificate (PEM). */
export function makeCa(dir: string, name: string): string {
  openssl([
    'req',
    '-x509',
    ...EC,
    '-days',
    '2',
    '-subj',
    `/CN=${name}`,
    '-addext',
    'basicConstraints=critical,CA:TRUE',
    '-addext',
    'keyUsage=critical,keyCertSign,cRLSign',
    '-keyout',
    join(dir, `${name}.key`),
    '-out',
    join(dir, `${name}.pem`),
  ]);
  return readFileSync(join(dir, `${name}.pem`), 'utf8');
}

/**
 * A certificate for `name` (CN) signed by the CA `ca` made by makeCa, with the extensions `ext`
 * (an openssl extension line: `subjectAltName=IP:127.0.0.1`, `extendedKeyUsage=clientAuth`),
 * valid for `days` from now (-1: it expired a day ago).
 */
export function issue(dir: string, ca: string, name: string, ext: string, days = 1): Issued {
  openssl(['req', ...EC, '-subj', `/CN=${name}`, '-keyout', join(dir, `${name}.key`), '-out', join(dir, `${name}.csr`)]);
  writeFileSync(join(dir, `${name}.ext`), `${ext}\n`);
  openssl([
    'x509',
    '-req',
    '-in',
    join(dir, `${name}.csr`),
    '-CA',
    join(dir, `${ca}.pem`),
    '-CAkey',
    join(dir, `${ca}.key`),
    '-CAcreateserial',
    '-days',
    String(days),
    '-extfile',
    join(dir, `${name}.ext`),
    '-out',
    join(dir, `${name}.pem`),
  ]);
  return { key: readFileSync(join(dir, `${name}.key`), 'utf8'), cert: readFileSync(join(dir, `${name}.pem`), 'utf8') };
}
