// Prisma's schema engine, run as WebAssembly so that migrations need no download.
//
// The Prisma CLI fetches a native schema-engine binary before `migrate`, and that fetch cannot
// succeed on our machines or in CI. `@prisma/schema-engine-wasm` is the same engine compiled to
// WASM; its entry file imports the `.wasm` as an ES module, which Node 20 cannot load, so it is
// instantiated by hand here. Everything else in src/db talks to the engine through this module.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { bindMigrationAwareSqlAdapterFactory } from '@prisma/driver-adapter-utils';
import type { SqlDriverAdapter, SqlMigrationAwareDriverAdapterFactory } from '@prisma/driver-adapter-utils';
import * as bindings from '@prisma/schema-engine-wasm/schema_engine_bg';
import type { SchemaEngine } from '@prisma/schema-engine-wasm';

// The global WebAssembly object, typed as much as we use of it (Node's types leave it out).
const wasmApi = (
  globalThis as unknown as {
    WebAssembly: { instantiate(bytes: Uint8Array, imports: object): Promise<{ instance: { exports: object } }> };
  }
).WebAssembly;

let loaded: Promise<void> | undefined;

function loadWasm(): Promise<void> {
  loaded ??= (async () => {
    // The package exports no path to its .wasm, so find it beside the bindings module.
    const bindingsFile = createRequire(import.meta.url).resolve('@prisma/schema-engine-wasm/schema_engine_bg');
    const bytes = await readFile(join(dirname(bindingsFile), 'schema_engine_bg.wasm'));
    const { instance } = await wasmApi.instantiate(bytes, { './schema_engine_bg.js': bindings });
    const exports = instance.exports as { __wbindgen_start(): void };
    bindings.__wbg_set_wasm(exports);
    exports.__wbindgen_start();
  })();
  return loaded;
}

export interface OpenSchemaEngine {
  engine: SchemaEngine;
  /** Frees the engine and closes every connection it opened (it does not close them itself). */
  close(): Promise<void>;
}

/** Opens a schema engine on the database behind `adapterFactory`, for the given schema file. */
export async function openSchemaEngine(
  adapterFactory: SqlMigrationAwareDriverAdapterFactory,
  schema: { path: string; content: string },
  log: (message: string) => void = () => {},
): Promise<OpenSchemaEngine> {
  await loadWasm();
  // Freeing the engine leaves its connections open, and an open SQLite connection keeps its
  // locks: track what it opens so that close() can dispose of it.
  const opened: SqlDriverAdapter[] = [];
  const tracked: SqlMigrationAwareDriverAdapterFactory = {
    provider: adapterFactory.provider,
    adapterName: adapterFactory.adapterName,
    connect: async () => track(await adapterFactory.connect()),
    connectToShadowDb: async () => track(await adapterFactory.connectToShadowDb()),
  };
  function track(adapter: SqlDriverAdapter): SqlDriverAdapter {
    opened.push(adapter);
    return adapter;
  }
  const engine = await bindings.SchemaEngine.new(
    { datamodels: [[schema.path, schema.content]] },
    log,
    bindMigrationAwareSqlAdapterFactory(tracked),
  );
  return {
    engine,
    close: async () => {
      engine.free();
      await Promise.all(opened.splice(0).map((adapter) => adapter.dispose()));
    },
  };
}
