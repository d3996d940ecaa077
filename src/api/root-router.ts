// The whole API: one router per domain, merged here. `AppRouter` is the type TypeScript clients
// import to get end-to-end types (`createTRPCClient<AppRouter>`).
import { petsRouter } from './pets-router.js';
import { router } from './trpc.js';

export const appRouter = router({
  pets: petsRouter,
});

export type AppRouter = typeof appRouter;
