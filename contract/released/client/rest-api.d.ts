export interface paths {
    "/pets": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * List animals
         * @description Returns animals in ascending `id` order (creation order), at most `limit` of them. To walk the whole inventory, ask for the next page with `after` set to the last `id` of this one: a full page carries a `Link` header (`rel="next"`) to it; a shorter page is the last.
         */
        get: operations["listPets"];
        put?: never;
        /**
         * Add an animal
         * @description Send an `Idempotency-Key` header to make retries safe: a repeat with the same key and body replays the first answer (with `Idempotent-Replayed: true`) and creates nothing.
         */
        post: operations["createPet"];
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
    "/pets/{petId}": {
        parameters: {
            query?: never;
            header?: never;
            path?: never;
            cookie?: never;
        };
        /**
         * Get an animal (deprecated)
         * @deprecated
         * @description Deprecated; removed on 5 December 2030. Use `GET /pets` (listPets) with the `status` filter instead.
         */
        get: operations["getPet"];
        put?: never;
        post?: never;
        delete?: never;
        options?: never;
        head?: never;
        patch?: never;
        trace?: never;
    };
}
export type webhooks = Record<string, never>;
export interface components {
    schemas: {
        /**
         * @description Availability status.
         * @enum {string}
         */
        PetStatus: "available" | "pending" | "sold";
        Pets: components["schemas"]["Pet"][];
        Pet: {
            /**
             * Format: int64
             * @description Unique identifier, assigned by the service on creation.
             * @example 1
             */
            id: number;
            /**
             * @description The animal's name: not blank (white space and invisible format characters such as U+200B do not count), no control characters, valid Unicode text (no unpaired surrogates).
             * @example Rex
             */
            name: string;
            /**
             * Format: int64
             * @description Identifier of the category the animal belongs to.
             * @example 1
             */
            categoryId: number;
            status: components["schemas"]["PetStatus"];
        };
        /** @description The body of every error response. */
        Error: {
            /**
             * @description Machine-readable error code.
             * @enum {string}
             */
            code: "BAD_REQUEST" | "UNAUTHORIZED" | "NOT_FOUND" | "METHOD_NOT_SUPPORTED" | "TIMEOUT" | "PAYLOAD_TOO_LARGE" | "UNSUPPORTED_MEDIA_TYPE" | "UNPROCESSABLE_CONTENT" | "TOO_MANY_REQUESTS" | "REQUEST_HEADER_FIELDS_TOO_LARGE" | "INTERNAL_SERVER_ERROR" | "SERVICE_UNAVAILABLE";
            /** @description Human-readable description: which input was wrong and how. */
            message: string;
            /**
             * @description The HTTP status code of the response.
             * @example 400
             */
            status: number;
        };
    };
    responses: never;
    parameters: never;
    requestBodies: never;
    headers: {
        /** @description The request's id: the caller's own X-Request-Id when it sent one, else a generated UUID. Quote it when reporting a problem. */
        "X-Request-Id": string;
        /** @description W3C Trace Context: this request's trace, with this service's span: the caller's trace id when it sent a valid `traceparent`, else a new one. Join it with the service's log lines (`trace_id`, `span_id`). */
        traceparent: string;
        /** @description What is left of the per-key limit (draft-ietf-httpapi-ratelimit-headers): requests left (`r`) and seconds until the window resets (`t`). Sent on answers to requests with a valid key while the limit is on (RATE_LIMIT_PER_MINUTE > 0). */
        RateLimit: string;
        /** @description The per-key limit: requests (`q`) per window of `w` seconds. Sent with RateLimit. */
        "RateLimit-Policy": string;
        /** @description Seconds to wait before trying again (RFC 9110 §10.2.3). */
        "Retry-After": number;
        /** @description The Bearer challenge (RFC 6750 §3): `Bearer realm="animal-store"`, with `error="invalid_token"` when a key was sent and refused. */
        "WWW-Authenticate": string;
        /** @description `true` when this is the recorded answer to an earlier request with the same Idempotency-Key (nothing was created now). */
        "Idempotent-Replayed": "true";
        /** @description RFC 9745: when the operation was deprecated, as `@<unix seconds>`. */
        Deprecation: string;
        /** @description RFC 8594: when the operation will be removed. */
        Sunset: string;
        /** @description Where the replacement is documented (`rel="deprecation"`). */
        Link: string;
    };
    pathItems: never;
}
export type $defs = Record<string, never>;
export interface operations {
    listPets: {
        parameters: {
            query?: {
                /** @description Maximum number of animals to return. */
                limit?: number;
                /** @description Returns only animals with this status. */
                status?: components["schemas"]["PetStatus"];
                /** @description Returns only animals with an `id` greater than this one: the last `id` of the previous page. */
                after?: number;
            };
            header?: never;
            path?: never;
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful response */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    /** @description RFC 8288: on a full page, the next page (`rel="next"`): the same `limit` and `status`, with `after` set to the last `id` of this page, e.g. `</v1/pets?limit=20&after=20>; rel="next"`. Absent on the last page. */
                    Link?: string;
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pets"];
                };
            };
            /** @description Invalid `limit`, `status` or `after`. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "BAD_REQUEST",
                     *       "message": "limit: must be at most 100",
                     *       "status": 400
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or invalid API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "UNAUTHORIZED",
                     *       "message": "A valid API key is required: send \"Authorization: Bearer <key>\".",
                     *       "status": 401
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request did not arrive in time: its headers within HEADERS_TIMEOUT_MS, or the whole request within REQUEST_TIMEOUT_MS. The connection is closed. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "TIMEOUT",
                     *       "message": "the request did not arrive in time (see REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS)",
                     *       "status": 408
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached; see Retry-After. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "TOO_MANY_REQUESTS",
                     *       "message": "Rate limit of 600 requests a minute reached for this API key; retry after 42 s.",
                     *       "status": 429
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request headers too large: the request line and headers together are over 16 KiB. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "REQUEST_HEADER_FIELDS_TOO_LARGE",
                     *       "message": "request headers are too large",
                     *       "status": 431
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected server error. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "INTERNAL_SERVER_ERROR",
                     *       "message": "Internal server error",
                     *       "status": 500
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database cannot serve at the moment: unreachable, restarting, overloaded or locked, or (on writes) out of space. Nothing was written. Retry after the `Retry-After` header's seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "SERVICE_UNAVAILABLE",
                     *       "message": "The database is unavailable at the moment; try again shortly.",
                     *       "status": 503
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    createPet: {
        parameters: {
            query?: never;
            header?: {
                /** @description Makes the create safe to retry: 1 to 255 visible ASCII characters other than `"`, optionally in double quotes. Keys expire after IDEMPOTENCY_TTL_HOURS (24 h by default). */
                "Idempotency-Key"?: string;
            };
            path?: never;
            cookie?: never;
        };
        requestBody: {
            content: {
                "application/json": {
                    /**
                     * @description The animal's name: not blank (white space and invisible format characters such as U+200B do not count), no control characters, valid Unicode text (no unpaired surrogates).
                     * @example Rex
                     */
                    name: string;
                    /**
                     * Format: int64
                     * @description Identifier of the category the animal belongs to.
                     * @example 1
                     */
                    categoryId: number;
                    /** @description Availability status; `available` when omitted. */
                    status?: components["schemas"]["PetStatus"];
                };
            };
        };
        responses: {
            /** @description Animal added; the body includes the assigned `id`. */
            201: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Idempotent-Replayed": components["headers"]["Idempotent-Replayed"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pet"];
                };
            };
            /** @description Body is missing required fields or contains invalid values. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "BAD_REQUEST",
                     *       "message": "categoryId: must be an integer",
                     *       "status": 400
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or invalid API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "UNAUTHORIZED",
                     *       "message": "A valid API key is required: send \"Authorization: Bearer <key>\".",
                     *       "status": 401
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request did not arrive in time: its headers within HEADERS_TIMEOUT_MS, or the whole request within REQUEST_TIMEOUT_MS. The connection is closed. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "TIMEOUT",
                     *       "message": "the request did not arrive in time (see REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS)",
                     *       "status": 408
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body larger than the limit. */
            413: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "PAYLOAD_TOO_LARGE",
                     *       "message": "body: is larger than the limit",
                     *       "status": 413
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Body is not `application/json`. */
            415: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "UNSUPPORTED_MEDIA_TYPE",
                     *       "message": "body: must be sent as Content-Type: application/json",
                     *       "status": 415
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The Idempotency-Key was already used with a different body. */
            422: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "UNPROCESSABLE_CONTENT",
                     *       "message": "Idempotency-Key: was already used with a different request; use a new key for a new request",
                     *       "status": 422
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached; see Retry-After. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "TOO_MANY_REQUESTS",
                     *       "message": "Rate limit of 600 requests a minute reached for this API key; retry after 42 s.",
                     *       "status": 429
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request headers too large: the request line and headers together are over 16 KiB. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "REQUEST_HEADER_FIELDS_TOO_LARGE",
                     *       "message": "request headers are too large",
                     *       "status": 431
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected server error. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "INTERNAL_SERVER_ERROR",
                     *       "message": "Internal server error",
                     *       "status": 500
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database cannot serve at the moment: unreachable, restarting, overloaded or locked, or (on writes) out of space. Nothing was written. Retry after the `Retry-After` header's seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "SERVICE_UNAVAILABLE",
                     *       "message": "The database is unavailable at the moment; try again shortly.",
                     *       "status": 503
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
    getPet: {
        parameters: {
            query?: never;
            header?: never;
            path: {
                /** @description The identifier of the animal. */
                petId: number;
            };
            cookie?: never;
        };
        requestBody?: never;
        responses: {
            /** @description Successful response */
            200: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    "application/json": components["schemas"]["Pet"];
                };
            };
            /** @description `petId` is not an integer in 1 … 2^53 − 1. */
            400: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "BAD_REQUEST",
                     *       "message": "petId: must be an integer",
                     *       "status": 400
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Missing or invalid API key. */
            401: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    "WWW-Authenticate": components["headers"]["WWW-Authenticate"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "UNAUTHORIZED",
                     *       "message": "A valid API key is required: send \"Authorization: Bearer <key>\".",
                     *       "status": 401
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The requested resource could not be found. */
            404: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "NOT_FOUND",
                     *       "message": "No pet has id 42.",
                     *       "status": 404
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The request did not arrive in time: its headers within HEADERS_TIMEOUT_MS, or the whole request within REQUEST_TIMEOUT_MS. The connection is closed. */
            408: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "TIMEOUT",
                     *       "message": "the request did not arrive in time (see REQUEST_TIMEOUT_MS and HEADERS_TIMEOUT_MS)",
                     *       "status": 408
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Rate limit reached; see Retry-After. */
            429: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "TOO_MANY_REQUESTS",
                     *       "message": "Rate limit of 600 requests a minute reached for this API key; retry after 42 s.",
                     *       "status": 429
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Request headers too large: the request line and headers together are over 16 KiB. */
            431: {
                headers: {
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "REQUEST_HEADER_FIELDS_TOO_LARGE",
                     *       "message": "request headers are too large",
                     *       "status": 431
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description Unexpected server error. */
            500: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "INTERNAL_SERVER_ERROR",
                     *       "message": "Internal server error",
                     *       "status": 500
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
            /** @description The database cannot serve at the moment: unreachable, restarting, overloaded or locked, or (on writes) out of space. Nothing was written. Retry after the `Retry-After` header's seconds. */
            503: {
                headers: {
                    "X-Request-Id": components["headers"]["X-Request-Id"];
                    traceparent: components["headers"]["traceparent"];
                    RateLimit: components["headers"]["RateLimit"];
                    "RateLimit-Policy": components["headers"]["RateLimit-Policy"];
                    "Retry-After": components["headers"]["Retry-After"];
                    Deprecation: components["headers"]["Deprecation"];
                    Sunset: components["headers"]["Sunset"];
                    Link: components["headers"]["Link"];
                    [name: string]: unknown;
                };
                content: {
                    /**
                     * @example {
                     *       "code": "SERVICE_UNAVAILABLE",
                     *       "message": "The database is unavailable at the moment; try again shortly.",
                     *       "status": 503
                     *     }
                     */
                    "application/json": components["schemas"]["Error"];
                };
            };
        };
    };
}
