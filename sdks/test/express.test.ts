import { join } from 'node:path';
import { ensureDist } from '../../packages/receiver/test/helpers/build.ts';
import { REPO_ROOT, describeExampleReceiver } from './harness.ts';
import { beforeAll } from 'vitest';

// The Node.js example, held to the same checks as the other languages' examples.
beforeAll(() => ensureDist()); // it imports @payhooks/receiver as published: from dist
describeExampleReceiver('express', join(REPO_ROOT, 'examples', 'receiver-express'));
