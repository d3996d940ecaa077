// A test server on a PostgreSQL cluster of the test's own, which the test may stop and start: the
// machine's shared server must never be stopped. Connecting and querying time out within a few
// seconds, so that an outage is answered inside the test's time.
import { startPrivatePostgres, type PrivatePostgres } from './private-postgres.js';
import { startTestServer, type TestServer } from './test-server.js';

export interface OutageServer {
  cluster: PrivatePostgres;
  server: TestServer;
  /** Stops the server first, so that it lets go of its pool, then destroys the cluster. */
  close(): Promise<void>;
}

export async function startOutageServer(): Promise<OutageServer> {
  const cluster = await startPrivatePostgres();
  let server: TestServer;
  try {
    server = await startTestServer({
      provider: 'postgresql',
      postgresServerUrl: cluster.url(),
      databaseSettings: { DATABASE_CONNECT_TIMEOUT_MS: '2000', DATABASE_QUERY_TIMEOUT_MS: '3000' },
    });
  } catch (error) {
    await cluster.destroy();
    throw error;
  }
  return {
    cluster,
    server,
    close: async () => {
      await server.app.close();
      await server.database.close();
      await cluster.destroy();
    },
  };
}
