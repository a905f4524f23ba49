export * from './catalog.ts';
export * from './envelope.ts';
export * from './headers.ts';
export * from './ids.ts';
export * from './limits.ts';
export * from './receiver-table.ts';
export * from './signature.ts';
export * from './test-vectors.ts';
