import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { resolveRelativeImport } from '../helpers/source-files.ts';

/**
 * The server's folders import one way (docs/architecture.md, "Folders import one way"). Each
 * folder and root file of packages/server/src is one node; a relative import from one node to
 * another is an edge, and every edge must point to a lower layer. A new folder or root file must
 * be given its layer here, so the shape can't drift without someone deciding it.
 */
const SRC = fileURLToPath(new URL('../../src/', import.meta.url));

/** Bottom first. A node may import only nodes of the layers below its own. */
const LAYERS: readonly (readonly string[])[] = [
  // Leaves: they import nothing of ours.
  ['clock', 'errors', 'ids', 'idempotency-window', 'periodic-job', 'endpoint-urls/'],
  ['db/', 'telemetry/'],
  ['config', 'scope'],
  ['logging', 'security/', 'audit/'],
  ['delivery/'],
  ['events/'],
  // The domain: payments and endpoints publish events; accounts and devtools stand beside them.
  ['payments/', 'endpoints/', 'accounts/', 'devtools/'],
  // Mail about endpoint health: the endpoints' notices, sent to the accounts' team.
  ['alerts/'],
  ['tenancy/'],
  ['context', 'store'],
  ['runtime'],
  ['api/'],
  ['cli/', 'index'],
];

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const path = join(dir, e.name);
    if (e.isDirectory()) return e.name === 'migrations' ? [] : sources(path);
    return /\.tsx?$/.test(e.name) && !e.name.endsWith('.d.ts') ? [path] : [];
  });
}

const nodeOf = (file: string) => {
  const parts = relative(SRC, file).split(sep);
  return parts.length > 1 ? `${parts[0]}/` : parts[0]!.replace(/\.tsx?$/, '');
};

/** Every folder-to-folder import: `from -> to` with the file that makes it. */
function imports(): Array<{ from: string; to: string; file: string }> {
  const out: Array<{ from: string; to: string; file: string }> = [];
  const pattern =
    /(?:import|export)\s+(?:type\s+)?(?:[^'"]*?\sfrom\s+)?['"](\.{1,2}\/[^'"]+)['"]|import\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g;
  for (const file of sources(SRC)) {
    for (const m of readFileSync(file, 'utf8').matchAll(pattern)) {
      const to = resolveRelativeImport(file, (m[1] ?? m[2])!);
      if (!to?.startsWith(SRC)) continue;
      const [a, b] = [nodeOf(file), nodeOf(to)];
      if (a !== b) out.push({ from: a, to: b, file: relative(SRC, file) });
    }
  }
  return out;
}

const rank = new Map(LAYERS.flatMap((layer, i) => layer.map((node) => [node, i] as const)));

describe('folders import one way', () => {
  it('every folder and root file of packages/server/src has a layer', () => {
    const nodes = new Set(sources(SRC).map(nodeOf));
    expect([...nodes].filter((n) => !rank.has(n)).sort(), 'give these a layer in LAYERS').toEqual([]);
    expect([...rank.keys()].filter((n) => !nodes.has(n)).sort(), 'these no longer exist').toEqual([]);
  });

  it('every import points to a lower layer (so no two folders import each other)', () => {
    const against = imports()
      .filter((e) => rank.has(e.from) && rank.has(e.to) && rank.get(e.to)! >= rank.get(e.from)!)
      .map((e) => `${e.file} imports ${e.to} (layer ${rank.get(e.to)}), from ${e.from} (layer ${rank.get(e.from)})`);
    expect([...new Set(against)].sort()).toEqual([]);
  });

  it('the rule has teeth: the import scan finds the edges it checks', () => {
    const edges = new Set(imports().map((e) => `${e.from} -> ${e.to}`));
    for (const known of ['api/ -> context', 'events/ -> delivery/', 'delivery/ -> db/', 'accounts/ -> audit/'])
      expect(edges).toContain(known);
  });
});
