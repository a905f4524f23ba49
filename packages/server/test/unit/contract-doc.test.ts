import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * "spec N" in code comments, test names and docs cites section N of docs/contract.md (item k of a
 * section's numbered list is N.k, or "N rule k"). Every citation in the repository must name a
 * section or item that document has, and no document may send readers outside the repository.
 */
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));

function sectionsOf(markdown: string): Set<string> {
  const ids = new Set<string>();
  let current: string | null = null;
  for (const line of markdown.split('\n')) {
    const heading = /^#{2,4} (\d+(?:\.\d+)*)\.? /.exec(line);
    if (heading) {
      current = heading[1]!;
      ids.add(current);
      continue;
    }
    if (/^#{2,4} /.test(line)) continue; // an unnumbered subsection (Manual replay) stays in its section
    const item = /^(\d+)\. /.exec(line);
    if (item && current) ids.add(`${current}.${item[1]}`);
  }
  return ids;
}

function files(dir: string, out: string[] = []): string[] {
  for (const name of readdirSync(dir)) {
    if (['node_modules', 'dist', 'data', '.stryker-tmp', 'reports', '.git', 'screenshots'].includes(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) files(path, out);
    else if (/\.(ts|tsx|js|md)$/.test(name)) out.push(path);
  }
  return out;
}

const contract = readFileSync(join(ROOT, 'docs/contract.md'), 'utf8');
const sections = sectionsOf(contract);
const sources = ['packages', 'examples', 'docs', 'bench', 'README.md'].flatMap((p) => {
  const path = join(ROOT, p);
  return statSync(path).isDirectory() ? files(path) : [path];
});

describe('docs/contract.md: the sections "spec N" cites', () => {
  it('has sections 1 to 9 and the numbered rules of each', () => {
    for (const id of [
      '1',
      '2.1',
      '2.2',
      '2.3',
      '2.4',
      '3.2',
      '4.1',
      '4.1.3',
      '4.2',
      '5.1',
      '5.1.1',
      '5.1.7',
      '5.2',
      '6.1',
      '6.1.4',
      '6.2',
      '6.2.5',
      '7',
      '8',
      '9',
    ]) {
      expect(sections.has(id), id).toBe(true);
    }
    expect(sections.has('5.1.8')).toBe(false);
  });

  it('every "spec N" in code, tests and docs resolves to a section of docs/contract.md', () => {
    const unresolved: string[] = [];
    let count = 0;
    for (const file of sources) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bspec (\d+(?:\.\d+)*)(?: rule (\d+))?/gi)) {
        count++;
        const id = m[2] ? `${m[1]}.${m[2]}` : m[1]!;
        if (!sections.has(id)) unresolved.push(`${relative(ROOT, file)}: ${m[0]}`);
      }
    }
    expect(count).toBeGreaterThan(300);
    expect(unresolved).toEqual([]);
  });

  it('README and docs/ link nothing outside the repository', () => {
    const docs = [join(ROOT, 'README.md'), ...files(join(ROOT, 'docs'))];
    for (const file of docs) {
      const text = readFileSync(file, 'utf8');
      expect(text, relative(ROOT, file)).not.toMatch(/\.\.\/shared|spec\/webhook-delivery|ARCHITECTURE\.md/);
      for (const [, target] of text.matchAll(/\]\(([^)#\s]+)[^)]*\)/g)) {
        if (/^(https?:|mailto:)/.test(target!)) continue;
        const resolved = join(file, '..', target!);
        expect(relative(ROOT, resolved).startsWith('..'), `${relative(ROOT, file)} links ${target}`).toBe(false);
      }
    }
  });
});
