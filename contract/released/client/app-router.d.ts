// AppRouter: the service's router type (src/api/root-router.ts) as TypeScript declares it, with the
// server's context and procedure metadata types replaced by `object` (written by npm run client:pack).
export type AppRouter = import("@trpc/server").TRPCBuiltRouter<{
    ctx: object;
    meta: object;
    errorShape: import("@trpc/server").TRPCDefaultErrorShape;
    transformer: false;
}, import("@trpc/server").TRPCDecorateCreateRouterOptions<{
    pets: import("@trpc/server").TRPCBuiltRouter<{
        ctx: object;
        meta: object;
        errorShape: import("@trpc/server").TRPCDefaultErrorShape;
        transformer: false;
    }, import("@trpc/server").TRPCDecorateCreateRouterOptions<{
        list: import("@trpc/server").TRPCQueryProcedure<{
            input: {
                limit?: number | undefined;
                status?: "available" | "pending" | "sold" | undefined;
                after?: number | undefined;
            } | undefined;
            output: {
                status: "available" | "pending" | "sold";
                name: string;
                categoryId: number;
                id: number;
            }[];
            meta: object;
            errorShape: import("@trpc/server").TRPCDefaultErrorShape;
        }>;
        create: import("@trpc/server").TRPCMutationProcedure<{
            input: {
                name: string;
                categoryId: number;
                status?: "available" | "pending" | "sold" | undefined;
            };
            output: {
                status: "available" | "pending" | "sold";
                name: string;
                categoryId: number;
                id: number;
            };
            meta: object;
            errorShape: import("@trpc/server").TRPCDefaultErrorShape;
        }>;
        /**
         * Get one pet by id.
         * @deprecated Removed on 2030-12-05: use `pets.list` with the `status` filter instead.
         */
        get: import("@trpc/server").TRPCQueryProcedure<{
            input: {
                petId: number;
            };
            output: {
                status: "available" | "pending" | "sold";
                name: string;
                categoryId: number;
                id: number;
            };
            meta: object;
            errorShape: import("@trpc/server").TRPCDefaultErrorShape;
        }>;
    }>>;
}>>;
