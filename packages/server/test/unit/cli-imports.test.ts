import { readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveRelativeImport } from '../helpers/source-files.ts';

/*
 * What a `payhooks` command loads before it does anything is what its static imports reach: a
 * dynamic import() runs only on the path that needs it. Most of a short command's time is that
 * loading, so the commands that need little must reach little.
 */
const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** `import … from` and `export … from` that exist at run time (`import type` is erased). */
const STATIC = /^\s*(?:import|export)\s+(?!type\s)(?:[^'";]*?\sfrom\s+)?['"]([^'"]+)['"]/gm;

/** Our files and the packages (by name) that loading `entry` loads. */
function closure(entry: string): { files: Set<string>; packages: Set<string> } {
  const files = new Set<string>();
  const packages = new Set<string>();
  const visit = (file: string) => {
    if (files.has(file)) return;
    files.add(file);
    for (const [, spec] of readFileSync(file, 'utf8').matchAll(STATIC)) {
      if (spec!.startsWith('.')) {
        const to = resolveRelativeImport(file, spec!);
        if (to) visit(to);
      } else if (!spec!.startsWith('node:')) {
        packages.add(spec!.startsWith('@') ? spec!.split('/').slice(0, 2).join('/') : spec!.split('/')[0]!);
      }
    }
  };
  visit(join(SRC, entry));
  return { files: new Set([...files].map((f) => relative(SRC, f))), packages };
}

describe('what a payhooks command loads at start', () => {
  it('the closure walk sees what serve loads: the HTTP server, the delivery engine and the context', () => {
    // The check below means something only if the walk finds these where they are imported.
    const serve = closure('cli/serve.ts');
    expect([...serve.files]).toEqual(expect.arrayContaining(['context.ts', 'runtime.ts', 'delivery/worker.ts']));
    expect([...serve.packages]).toEqual(expect.arrayContaining(['fastify', 'undici', 'pg']));
  });

  it('admin commands load the store and the account services only: no HTTP server, delivery engine, payments or mail client', () => {
    const admin = closure('cli/admin.ts');
    const heavy = [...admin.files].filter((f) => /^(api|delivery|events|payments|endpoints|devtools)\/|^(context|runtime)\.ts$/.test(f));
    expect(heavy).toEqual([]);
    for (const pkg of ['fastify', 'undici', 'nodemailer', 'prom-client', '@electric-sql/pglite'])
      expect(admin.packages.has(pkg), `${pkg} is loaded by every admin command`).toBe(false);
  });

  it('the command tree (--help, --version) loads no database driver, HTTP server or service code', () => {
    const main = closure('cli/main.ts');
    for (const pkg of ['pg', 'fastify', 'undici', 'drizzle-orm', '@electric-sql/pglite'])
      expect(main.packages.has(pkg), `${pkg} is loaded by --help`).toBe(false);
    expect(
      [...main.files].filter((f) => /^(api|delivery|accounts)\/|^db\/(client|hosts|schema)\.ts$|^(context|runtime|store)\.ts$/.test(f)),
    ).toEqual([]);
  });
});
