// The router's type as the client sees it. Here it is the server's own AppRouter, so the client's
// types follow every change to a procedure at once. In the package (`npm run client:pack`) this
// file is replaced by the router's declaration with the server's context and metadata types taken
// out (scripts/client-package/router-declaration.ts), so the package carries no server type.
export type { AppRouter } from '../../src/api/root-router.js';
