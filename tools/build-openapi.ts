// Writes docs/openapi/{account,prebid,reporting}.json from src/openapi/ (the served copies
// are the same objects). test/openapi/documents.test.ts fails when a committed file differs:
//   node --import tsx tools/build-openapi.ts
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { API_NAMES, openApiText } from '../src/openapi/documents.ts';

const dir = join(import.meta.dirname, '..', 'docs', 'openapi');
for (const name of API_NAMES) {
  writeFileSync(join(dir, `${name}.json`), openApiText(name));
  console.log(`docs/openapi/${name}.json`);
}
