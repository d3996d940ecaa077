// What the database does for the list query: which indexes it reads and whether it sorts. Each
// provider explains a query its own way; this reads either into one answer, so the list suite
// asserts the same rule on both.
import type { Database } from '../../src/db/database.js';

export interface QueryPlan {
  /** Names of the indexes the plan reads. */
  indexes: string[];
  /** Whether it sorts rows itself (a scan in the wrong order) instead of reading them in order. */
  sorts: boolean;
  /** Whether it reads the whole table. */
  scansTable: boolean;
}

interface PostgresPlanNode {
  'Node Type': string;
  'Index Name'?: string;
  Plans?: PostgresPlanNode[];
}

function flatten(node: PostgresPlanNode): PostgresPlanNode[] {
  return [node, ...(node.Plans ?? []).flatMap(flatten)];
}

/** The plan of the list query (`ORDER BY id LIMIT n`, with `WHERE status = …` when given). */
export async function listQueryPlan(database: Database, { status, limit }: { status?: string; limit: number }): Promise<QueryPlan> {
  if (database.provider === 'sqlite') {
    const where = status ? 'WHERE status = ?' : '';
    const rows = (await database.prisma.$queryRawUnsafe(
      `EXPLAIN QUERY PLAN SELECT id, name, category_id, status FROM pets ${where} ORDER BY id ASC LIMIT ?`,
      ...(status ? [status] : []),
      limit,
    )) as Array<{ detail: string }>;
    const detail = rows.map((row) => row.detail).join(' | ');
    return {
      indexes: [...detail.matchAll(/USING (?:COVERING )?INDEX (\w+)/g)].map((match) => match[1]!),
      sorts: /TEMP B-TREE/.test(detail),
      // SQLite reads the unfiltered list in rowid order with a plain "SCAN pets" and stops at
      // LIMIT; that is the primary key, so only a scan with a filter counts as a table scan here.
      scansTable: status !== undefined && /SCAN pets(?! USING)/.test(detail),
    };
  }
  const where = status ? `WHERE status = $1::"PetStatus"` : '';
  const rows = (await database.prisma.$queryRawUnsafe(
    `EXPLAIN (FORMAT JSON) SELECT id, name, category_id, status FROM pets ${where} ORDER BY id ASC LIMIT $${status ? 2 : 1}`,
    ...(status ? [status] : []),
    limit,
  )) as Array<{ 'QUERY PLAN': Array<{ Plan: PostgresPlanNode }> }>;
  const nodes = flatten(rows[0]!['QUERY PLAN'][0]!.Plan);
  return {
    indexes: nodes.flatMap((node) => (node['Index Name'] ? [node['Index Name']] : [])),
    sorts: nodes.some((node) => node['Node Type'].includes('Sort')),
    scansTable: nodes.some((node) => node['Node Type'] === 'Seq Scan'),
  };
}
