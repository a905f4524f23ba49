/**
 * What rebuilding a closed week's indexes gains (docs/decisions/compact-closed-weeks.md), on a
 * seeded history, through the retention job itself.
 *
 *   psql -h 127.0.0.1 -U postgres -c "CREATE DATABASE compact_weeks_bench"
 *   DATABASE_URL=postgres://postgres@127.0.0.1:5432/compact_weeks_bench npm run -s payhooks -- migrate
 *   npx tsx bench/growth/seed.ts postgres://postgres@127.0.0.1:5432/compact_weeks_bench 1000000
 *   npx tsx bench/compact-weeks.ts postgres://postgres@127.0.0.1:5432/compact_weeks_bench
 *
 * Runs `maintainPartitions` (now, a 30-day window) until a run rebuilds nothing: each run
 * rebuilds one partition of a closed week, with REINDEX TABLE CONCURRENTLY. Prints, per
 * partition and index, the bytes before and after and the seconds the REINDEX took, then the
 * totals per table (Markdown). The database is migrated first (0031's table is where rebuilt
 * partitions are remembered).
 */
import { openDatabase } from '../packages/server/src/db/client.ts';
import { migrate } from '../packages/server/src/db/migrate.ts';
import { maintainPartitions } from '../packages/server/src/db/retention.ts';
import type { Compaction } from '../packages/server/src/db/compact-weeks.ts';

const url = process.argv[2];
if (!url) throw new Error('usage: npx tsx bench/compact-weeks.ts <database url>');
const database = await openDatabase({ databaseUrl: url });
const MB = (b: number) => (b / 1_048_576).toFixed(1);
try {
  await migrate(database);
  const done: Compaction[] = [];
  for (;;) {
    const r = await maintainPartitions(database, { now: new Date(), retentionMs: 30 * 86_400_000 });
    if (r.compactFailed.length) throw new Error(JSON.stringify(r.compactFailed));
    const c = r.compacted[0];
    if (!c) break;
    done.push(c);
    process.stderr.write(
      `${c.partition}: ${MB(c.indexBytesBefore)} MB -> ${MB(c.indexBytesAfter)} MB in ${(c.durationMs / 1000).toFixed(1)} s\n`,
    );
  }
  const lines = ['| partition | index | before MB | after MB | after/before | REINDEX s |', '|---|---|--:|--:|--:|--:|'];
  for (const c of done) {
    for (const i of c.indexes) {
      lines.push(
        `| ${c.partition} | ${i.index} | ${MB(i.bytesBefore)} | ${MB(i.bytesAfter)} | ${(i.bytesAfter / i.bytesBefore).toFixed(2)} | |`,
      );
    }
    lines.push(
      `| **${c.partition}** | all | ${MB(c.indexBytesBefore)} | ${MB(c.indexBytesAfter)} | ${(c.indexBytesAfter / c.indexBytesBefore).toFixed(2)} | ${(c.durationMs / 1000).toFixed(1)} |`,
    );
  }
  lines.push('', '| table | weeks | before MB | after MB | after/before | REINDEX s (sum) |', '|---|--:|--:|--:|--:|--:|');
  const tables = new Map<string, { weeks: number; before: number; after: number; ms: number }>();
  for (const c of done) {
    const table = c.partition.replace(/_p\d{8}$/, '');
    const t = tables.get(table) ?? { weeks: 0, before: 0, after: 0, ms: 0 };
    t.weeks++;
    t.before += c.indexBytesBefore;
    t.after += c.indexBytesAfter;
    t.ms += c.durationMs;
    tables.set(table, t);
  }
  for (const [table, t] of tables) {
    lines.push(
      `| ${table} | ${t.weeks} | ${MB(t.before)} | ${MB(t.after)} | ${(t.after / t.before).toFixed(2)} | ${(t.ms / 1000).toFixed(1)} |`,
    );
  }
  process.stdout.write(`${lines.join('\n')}\n`);
} finally {
  await database.close();
}
