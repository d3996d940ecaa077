// What the database does for the list query: which indexes it reads and whether it sorts. Each
// provider explains a query its own way; this reads either into one answer, so the list suite
// asserts the same rule on both.
import type { Database } from '../../src/db/database.js';
import { PET_STATEMENTS, statement, textFor } from '../../src/db/sql.js';

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

let explained = 0;

/**
 * The plan of the repository's own list statement (src/db/sql.ts: `WHERE id > ?`,
 * with `status = ?` when given, `ORDER BY id LIMIT ?`), with these values. On PostgreSQL the
 * service may run it as a prepared statement, which may be planned once for any values (a generic
 * plan): `generic` asks for that plan instead of the one for these values.
 */
export async function listQueryPlan(
  database: Database,
  { status, limit, after = 0, generic = false }: { status?: string; limit: number; after?: number; generic?: boolean },
): Promise<QueryPlan> {
  const listStatement = status ? PET_STATEMENTS.listByStatus : PET_STATEMENTS.list;
  const values = status ? [status, after, limit] : [after, limit];
  if (database.provider === 'sqlite') {
    const rows = await database.prisma.$queryRawUnsafe<Array<{ detail: string }>>(
      `EXPLAIN QUERY PLAN ${textFor('sqlite', listStatement)}`,
      ...values,
    );
    const detail = rows.map((row) => row.detail).join(' | ');
    return {
      indexes: [...detail.matchAll(/USING (?:COVERING |INTEGER PRIMARY KEY )?INDEX (\w+)/g)].map((match) => match[1]!),
      sorts: /TEMP B-TREE/.test(detail),
      // With `id > ?` SQLite reads a range of the rowid ("SEARCH pets USING INTEGER PRIMARY KEY");
      // a bare "SCAN pets" reads the whole table.
      scansTable: /SCAN pets(?! USING)/.test(detail),
    };
  }
  // In one transaction, so on one server connection even through a transaction pooler: the
  // statement's PostgreSQL text prepared under a name of its own (as the service's named
  // statements are), then EXPLAIN EXECUTE of it with the plan cache mode asked for.
  const name = `explained_list_${process.pid}_${++explained}`;
  const literals = values.map((value) => (typeof value === 'string' ? `'${value}'` : String(value))).join(', ');
  const rows = await database.sql.transaction(async (session) => {
    await session.query(statement(`prepare_${name}`, `PREPARE ${name} AS ${textFor('postgresql', listStatement)}`), []);
    await session.query(
      statement(
        `plan_cache_mode_${generic ? 'generic' : 'custom'}`,
        `SET LOCAL plan_cache_mode = ${generic ? 'force_generic_plan' : 'force_custom_plan'}`,
      ),
      [],
    );
    const plan = await session.query(statement(`explain_${name}`, `EXPLAIN (FORMAT JSON) EXECUTE ${name}(${literals})`), []);
    await session.query(statement(`deallocate_${name}`, `DEALLOCATE ${name}`), []);
    return plan;
  });
  const plan = rows[0]![0] as Array<{ Plan: PostgresPlanNode }>;
  const nodes = flatten(plan[0]!.Plan);
  return {
    indexes: nodes.flatMap((node) => (node['Index Name'] ? [node['Index Name']] : [])),
    sorts: nodes.some((node) => node['Node Type'].includes('Sort')),
    scansTable: nodes.some((node) => node['Node Type'] === 'Seq Scan'),
  };
}
