import { existsSync, statSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';

/** The TypeScript file a relative import of `from` names (`./x`, `./x.ts`, `./x/index.ts`), or null. */
export function resolveRelativeImport(from: string, spec: string): string | null {
  const base = resolve(dirname(from), spec);
  for (const candidate of [base, `${base}.ts`, join(base, 'index.ts')])
    if (existsSync(candidate) && statSync(candidate).isFile()) return candidate;
  return null;
}
