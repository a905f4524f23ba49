import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * The documentation a newcomer reads stays navigable: the README is a short front door, every
 * relative link in the docs reaches a file (and a heading, when it names one), no document cites
 * a tracker's issue numbers or anything outside the repository, and every decision record has
 * its three parts and a row in the index.
 */
const ROOT = fileURLToPath(new URL('../../../../', import.meta.url));
const SKIP = new Set(['node_modules', 'dist', 'data', '.stryker-tmp', 'reports', '.git', 'results', 'vendor', 'target']);

function markdownUnder(dir: string, out: string[] = []): string[] {
  if (!existsSync(dir)) return out;
  for (const name of readdirSync(dir)) {
    if (SKIP.has(name)) continue;
    const path = join(dir, name);
    if (statSync(path).isDirectory()) markdownUnder(path, out);
    else if (name.endsWith('.md')) out.push(path);
  }
  return out;
}

function readmesOf(dir: string): string[] {
  return readdirSync(join(ROOT, dir))
    .map((name) => join(ROOT, dir, name, 'README.md'))
    .filter((path) => existsSync(path));
}

/** README, docs/, bench/, deploy/ and the README of every SDK, example and package. */
const DOCUMENTS = [
  join(ROOT, 'README.md'),
  ...markdownUnder(join(ROOT, 'docs')),
  ...markdownUnder(join(ROOT, 'bench')),
  ...markdownUnder(join(ROOT, 'deploy')),
  ...readmesOf('sdks'),
  ...readmesOf('examples'),
  ...readmesOf('packages'),
];

const name = (file: string) => relative(ROOT, file);
const withoutCode = (markdown: string) => markdown.replace(/^(```|~~~)[^\n]*\n[\s\S]*?^\1[^\n]*$/gm, '');

/** GitHub's heading anchors (github-slugger's rule): lower case, punctuation dropped, spaces to hyphens, repeats numbered. */
function anchorsOf(markdown: string): Set<string> {
  const anchors = new Set<string>();
  const seen = new Map<string, number>();
  for (const [, heading] of withoutCode(markdown).matchAll(/^#{1,6}[ \t]+(.+?)[ \t#]*$/gm)) {
    const base = heading!
      .replace(/<[^>]+>/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{M}\p{N}\p{Pc} -]/gu, '')
      .replace(/ /g, '-');
    const count = seen.get(base) ?? 0;
    seen.set(base, count + 1);
    anchors.add(count === 0 ? base : `${base}-${count}`);
  }
  return anchors;
}

describe('documentation', () => {
  it('finds the documents it checks', () => {
    expect(DOCUMENTS.length).toBeGreaterThan(40);
    expect(DOCUMENTS.map(name)).toEqual(expect.arrayContaining(['README.md', 'docs/operations.md', 'docs/decisions/README.md']));
  });

  it('README.md is a front door: under 250 lines', () => {
    const lines = readFileSync(join(ROOT, 'README.md'), 'utf8').split('\n').length;
    expect(lines).toBeLessThan(250);
  });

  it('no document cites issue numbers: it says what the thing is', () => {
    const found: string[] = [];
    for (const file of DOCUMENTS) {
      const text = readFileSync(file, 'utf8');
      for (const m of text.matchAll(/\bissues?[ \t]*(?:#|no\.?[ \t]*)?\d+|\bissue\d+|\(#\d+\)|\bgh-\d+/gi)) {
        found.push(`${name(file)}: ${m[0].trim()}`);
      }
    }
    expect(found).toEqual([]);
  });

  it('no document links or cites anything outside the repository', () => {
    for (const file of DOCUMENTS) {
      expect(readFileSync(file, 'utf8'), name(file)).not.toMatch(/\.\.\/shared|\/work\/shared|spec\/webhook-delivery/);
    }
  });

  it('every relative link resolves to a file, and every anchor to a heading of it', () => {
    const broken: string[] = [];
    const anchors = new Map<string, Set<string>>();
    for (const file of DOCUMENTS) {
      const text = withoutCode(readFileSync(file, 'utf8'));
      for (const [, link] of text.matchAll(/\]\(<?([^)\s>]+)>?(?:\s+"[^"]*")?\)/g)) {
        if (/^[a-z][a-z0-9+.-]*:/i.test(link!)) continue; // https:, mailto:
        const [path, anchor] = link!.split('#', 2) as [string, string | undefined];
        const target = path === '' ? file : join(dirname(file), decodeURIComponent(path));
        if (relative(ROOT, target).startsWith('..')) {
          broken.push(`${name(file)}: ${link} leaves the repository`);
          continue;
        }
        if (!existsSync(target)) {
          broken.push(`${name(file)}: ${link} (no such file)`);
          continue;
        }
        if (!anchor || !target.endsWith('.md')) continue;
        if (!anchors.has(target)) anchors.set(target, anchorsOf(readFileSync(target, 'utf8')));
        if (!anchors.get(target)!.has(decodeURIComponent(anchor).toLowerCase()))
          broken.push(`${name(file)}: ${link} (no such heading in ${name(target)})`);
      }
    }
    expect(broken).toEqual([]);
  });

  it('every decision record has Context, Decision and Consequences, and a row in the index', () => {
    const dir = join(ROOT, 'docs/decisions');
    const index = readFileSync(join(dir, 'README.md'), 'utf8');
    const records = readdirSync(dir).filter((f) => f.endsWith('.md') && f !== 'README.md');
    expect(records.length).toBeGreaterThan(20);
    for (const record of records) {
      expect(record, 'a kebab-case file name').toMatch(/^[a-z0-9]+(-[a-z0-9]+)*\.md$/);
      const text = readFileSync(join(dir, record), 'utf8');
      expect(text, record).toMatch(/^# \S/);
      for (const section of ['## Context', '## Decision', '## Consequences'])
        expect(text.split('\n'), `${record}: ${section}`).toContain(section);
      expect(index, `docs/decisions/README.md links ${record}`).toContain(`](${record})`);
    }
  });
});
