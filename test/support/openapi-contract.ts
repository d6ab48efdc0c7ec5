import Ajv, { ValidateFunction } from 'ajv';
import addFormats from 'ajv-formats';
import type { NestExpressApplication } from '@nestjs/platform-express';
import type { NextFunction, Request, Response } from 'express';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

type Schema = Record<string, unknown>;

interface ResponseObject {
  content?: Record<string, { schema?: Schema }>;
}

interface OpenApiDocument {
  paths: Record<string, Record<string, { responses: Record<string, ResponseObject> }>>;
  components?: { schemas?: Record<string, Schema> };
}

/** Schema keywords whose value is one schema, a list of schemas, or a map of them. */
const ONE_SCHEMA = ['items', 'not', 'additionalProperties'];
const SCHEMA_LISTS = ['allOf', 'anyOf', 'oneOf'];
const SCHEMA_MAPS = ['properties'];

/**
 * An OpenAPI 3.0 schema as the JSON Schema ajv reads: references into components point at
 * $defs; `nullable` becomes a null type (or branch); `example`, which JSON Schema does not
 * know, goes. With `closed`, objects take no property they do not name: a response that
 * carries more than its document says has drifted from it as surely as one that carries less.
 */
function toJsonSchema(schema: Schema, closed: boolean): Schema {
  const converted: Schema = {};
  for (const [keyword, value] of Object.entries(schema)) {
    if (keyword === 'example' || keyword === 'nullable') continue;
    if (keyword === '$ref' && typeof value === 'string') {
      converted.$ref = value.replace('#/components/schemas/', '#/$defs/');
    } else if (ONE_SCHEMA.includes(keyword) && typeof value === 'object' && value !== null) {
      converted[keyword] = toJsonSchema(value as Schema, closed);
    } else if (SCHEMA_LISTS.includes(keyword) && Array.isArray(value)) {
      converted[keyword] = value.map((item) => toJsonSchema(item as Schema, closed));
    } else if (SCHEMA_MAPS.includes(keyword) && typeof value === 'object' && value !== null) {
      converted[keyword] = Object.fromEntries(
        Object.entries(value).map(([name, item]) => [name, toJsonSchema(item as Schema, closed)]),
      );
    } else {
      converted[keyword] = value;
    }
  }
  if (
    closed &&
    converted.properties !== undefined &&
    converted.additionalProperties === undefined
  ) {
    converted.additionalProperties = false;
  }
  if (schema.nullable !== true) return converted;
  // A nullable reference (`allOf: [$ref]`, as Nest writes one) is null or the referenced schema.
  const composed = SCHEMA_LISTS.some((keyword) => converted[keyword] !== undefined);
  if (typeof converted.type === 'string' && !composed) {
    converted.type = [converted.type, 'null'];
    if (Array.isArray(converted.enum)) converted.enum = [...(converted.enum as unknown[]), null];
    return converted;
  }
  return { anyOf: [converted, { type: 'null' }] };
}

/** Path templates of a document, most literal first, as patterns over a request's path. */
function pathMatchers(document: OpenApiDocument): Array<{ template: string; pattern: RegExp }> {
  return Object.keys(document.paths)
    .sort((a, b) => a.split('{').length - b.split('{').length)
    .map((template) => ({
      template,
      pattern: new RegExp(
        `^${template
          .split(/\{[^}]+\}/)
          .map((part) => part.replace(/[.*+?^$()|[\]\\]/g, '\\$&'))
          .join('[^/]+')}$`,
      ),
    }));
}

/** One response as a client received it. */
export interface ObservedResponse {
  method: string;
  /** The request's path, with or without its query. */
  url: string;
  status: number;
  contentType?: string;
  body: string;
}

/**
 * A committed OpenAPI document, as the judge of what a daemon answers: every response of an
 * operation it describes must have a declared status, and a body that its schema accepts
 * (checked by ajv with ajv-formats), or no body where it declares none. Requests to paths or
 * methods it does not describe (Swagger UI, routes that do not exist) are not its to judge.
 */
export class OpenApiContract {
  private readonly ajv = new Ajv({ allErrors: true, strict: true, allowUnionTypes: true });
  private readonly defs: Record<string, Schema>;
  private readonly matchers: Array<{ template: string; pattern: RegExp }>;
  private readonly validators = new Map<string, ValidateFunction>();

  constructor(
    readonly name: string,
    private readonly document: OpenApiDocument,
  ) {
    addFormats(this.ajv);
    this.defs = Object.fromEntries(
      Object.entries(document.components?.schemas ?? {}).map(([schemaName, schema]) => [
        schemaName,
        toJsonSchema(schema, true),
      ]),
    );
    this.matchers = pathMatchers(document);
  }

  /** A document committed in openapi/, such as `fleet.openapi.json`. */
  static committed(file: string): OpenApiContract {
    const path = join(__dirname, '../../openapi', file);
    return new OpenApiContract(file, JSON.parse(readFileSync(path, 'utf8')) as OpenApiDocument);
  }

  /** What is wrong with the response, in words; [] when the document allows it. */
  problems(response: ObservedResponse): string[] {
    const method = response.method.toLowerCase();
    const path = response.url.split('?')[0].replace(/(.)\/+$/, '$1');
    const template = this.matchers.find(({ pattern }) => pattern.test(path))?.template;
    const operation = template === undefined ? undefined : this.document.paths[template][method];
    if (template === undefined || operation === undefined) return [];
    const where = `${response.method.toUpperCase()} ${template} answered ${response.status}`;
    const declared = operation.responses[String(response.status)];
    if (declared === undefined) {
      return [
        `${where}, a status ${this.name} does not declare (it declares ${Object.keys(operation.responses).join(', ')})`,
      ];
    }
    const media = declared.content?.['application/json'];
    if (media?.schema === undefined) {
      return response.body.length === 0
        ? []
        : [
            `${where} with a body, where ${this.name} declares none: ${response.body.slice(0, 200)}`,
          ];
    }
    if (!/^application\/json\b/.test(response.contentType ?? '')) {
      return [`${where} with content-type ${response.contentType}, not application/json`];
    }
    let body: unknown;
    try {
      body = JSON.parse(response.body);
    } catch {
      return [`${where} with a body that is not JSON: ${response.body.slice(0, 200)}`];
    }
    const validate = this.validator(`${method} ${template} ${response.status}`, media.schema);
    if (validate(body)) return [];
    return (validate.errors ?? []).map(
      (error) =>
        `${where} with a body ${this.name} does not allow: ${error.instancePath || '(the body)'} ${error.message}${error.keyword === 'additionalProperties' ? ` (${JSON.stringify(error.params)})` : ''}`,
    );
  }

  private validator(key: string, schema: Schema): ValidateFunction {
    let validate = this.validators.get(key);
    if (!validate) {
      validate = this.ajv.compile({ ...toJsonSchema(schema, true), $defs: this.defs });
      this.validators.set(key, validate);
    }
    return validate;
  }
}

/**
 * Checks every response an in-process app sends against its committed document, as the
 * client receives it (status, content-type and the bytes of the body). `verdict()` says what
 * did not match, for the app's close() to fail the test with.
 */
export function checkResponsesAgainst(
  app: NestExpressApplication,
  contract: OpenApiContract,
): { verdict(): string[] } {
  const problems: string[] = [];
  app.use((req: Request, res: Response, next: NextFunction) => {
    const chunks: Buffer[] = [];
    const keep = (chunk: unknown, encoding?: unknown): void => {
      if (chunk === undefined || chunk === null || typeof chunk === 'function') return;
      chunks.push(
        Buffer.isBuffer(chunk)
          ? chunk
          : Buffer.from(
              chunk as string,
              typeof encoding === 'string' ? (encoding as BufferEncoding) : 'utf8',
            ),
      );
    };
    const write = res.write.bind(res) as (...args: unknown[]) => boolean;
    const end = res.end.bind(res) as (...args: unknown[]) => Response;
    res.write = ((chunk: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return write(chunk, ...rest);
    }) as Response['write'];
    res.end = ((chunk?: unknown, ...rest: unknown[]) => {
      keep(chunk, rest[0]);
      return end(chunk, ...rest);
    }) as Response['end'];
    res.on('finish', () => {
      if (req.method === 'HEAD') return;
      const contentType = res.getHeader('content-type');
      problems.push(
        ...contract.problems({
          method: req.method,
          url: req.originalUrl,
          status: res.statusCode,
          contentType: contentType === undefined ? undefined : String(contentType),
          body: Buffer.concat(chunks).toString('utf8'),
        }),
      );
    });
    next();
  });
  return { verdict: () => [...problems] };
}

/** Fails with every response that broke the contract, after `close` has run. */
export async function closeAndJudge(
  close: () => Promise<void>,
  checked: { verdict(): string[] },
): Promise<void> {
  await close();
  const problems = checked.verdict();
  if (problems.length > 0) {
    throw new Error(
      `responses that break the committed OpenAPI document:\n${problems.map((problem) => `- ${problem}`).join('\n')}`,
    );
  }
}
