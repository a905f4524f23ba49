import { SerializerSelector } from '@fastify/fast-json-stringify-compiler';
import { Ajv, type ValidateFunction } from 'ajv';

/*
 * The functions Fastify compiles from route schemas (Ajv validators, fast-json-stringify
 * serializers), kept by what the schema says for the life of the process. Compiling them was
 * about 200 ms of CPU per app: once in a `payhooks` process, but once per service in a test
 * worker, which starts a hundred or more. A schema's compiled function depends only on its text
 * and on the shared schemas it refers to, and keeps no state between calls.
 */
const compiled = new Map<string, unknown>();

function once<T>(key: string, make: () => T): T {
  if (compiled.has(key)) return compiled.get(key) as T;
  const made = make();
  compiled.set(key, made);
  return made;
}

type SerializerFactory = ReturnType<typeof SerializerSelector>;

/**
 * Bodies are validated strictly: no type coercion and no silent removal of unknown fields, so
 * `{"url": 5}` and typos are 400s that name the field. Query strings and path params are
 * strings on the wire, so they are coerced (`limit=10` -> 10). `shared`: the schemas referred
 * to by name, the same in every app of the process.
 */
export function validatorCompiler(shared: readonly object[]) {
  const context = JSON.stringify(shared);
  const { body, query } = once(`ajv ${context}`, () => {
    // `verbose`: errors carry the failing schema and value, so an enum error can name both.
    const options = { allErrors: false, useDefaults: true, strict: false, verbose: true };
    const instances = {
      body: new Ajv({ ...options, coerceTypes: false, removeAdditional: false }),
      query: new Ajv({ ...options, coerceTypes: true, removeAdditional: false }),
    };
    for (const one of Object.values(instances)) one.addSchema([...shared]);
    return instances;
  });
  return ({ schema, httpPart }: { schema: object; httpPart?: string }): ValidateFunction => {
    const part = httpPart === 'body' ? 'body' : 'query';
    return once(`validate ${part} ${context} ${JSON.stringify(schema)}`, () => (part === 'body' ? body : query).compile(schema));
  };
}

/** Fastify's own serializer factory (fast-json-stringify), each compiled serializer kept. */
export const serializerFactory: SerializerFactory = (externalSchemas, options) => {
  const build = SerializerSelector()(externalSchemas, options);
  const context = JSON.stringify([externalSchemas, options]);
  return (route) => once(`serialize ${context} ${JSON.stringify(route.schema)}`, () => build(route));
};
