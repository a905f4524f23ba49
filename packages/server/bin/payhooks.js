#!/usr/bin/env node
// The CLI runs the TypeScript sources through tsx's loader (see docs/decisions.md).
import { register } from 'tsx/esm/api';

register();
const { main } = await import('../src/cli/main.ts');
await main(process.argv);
