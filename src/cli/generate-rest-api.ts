// `npm run openapi:types`: regenerates client/src/rest-api.ts from the OpenAPI document.
import { writeFile } from 'node:fs/promises';
import { generateRestApiTypes, REST_API_TYPES_FILE } from './rest-api-types.js';

await writeFile(REST_API_TYPES_FILE, await generateRestApiTypes());
console.log(`wrote ${REST_API_TYPES_FILE}`);
