import type { NestExpressApplication } from '@nestjs/platform-express';
import type * as Swagger from '@nestjs/swagger';
import type { DocumentBuilder, OpenAPIObject } from '@nestjs/swagger';
import { applyOpenApiDecorators } from '@app/api-basics';
import { BearerTokens, TOKEN_ROLES, TokenRole } from './bearer-token.guard';
import { routesBehindPrefix } from './routes-behind-prefix';

/**
 * @nestjs/swagger, loaded only by whoever builds or serves a document, with every deferred
 * decorator applied: the running agent does neither, and so never loads it.
 */
function swagger(): typeof Swagger {
  applyOpenApiDecorators();
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require('@nestjs/swagger') as typeof Swagger;
}

/** What both daemons' documents say of themselves besides their operations. */
export interface DaemonApiDescription {
  title: string;
  description: string;
  /** The base URL, with a {variable} for each part that differs per install. */
  server: {
    url: string;
    description: string;
    variables: Record<string, { default: string; description: string }>;
  };
  /** Every tag an operation uses, with what its operations are about. */
  tags: Record<string, string>;
}

/** The document builder of a daemon: title, version, licence, base URL and tags. */
export function daemonDocumentBuilder(api: DaemonApiDescription): DocumentBuilder {
  const builder = new (swagger().DocumentBuilder)()
    .setTitle(api.title)
    .setDescription(api.description)
    .setVersion('1')
    .addServer(api.server.url, api.server.description, api.server.variables);
  for (const [name, description] of Object.entries(api.tags)) builder.addTag(name, description);
  return builder;
}

/**
 * What decorators cannot say. The licence: the package is private (UNLICENSED in package.json),
 * so there is no licence text to link to. Parameter examples: Nest puts the examples of a
 * parameter class in each parameter's schema only, and tools that build requests from the
 * document (Dredd, Swagger UI) read them from the parameter itself.
 */
export function finishDaemonDocument(document: OpenAPIObject): OpenAPIObject {
  document.info.license = { name: 'Proprietary (UNLICENSED): no licence is granted' };
  for (const operations of Object.values(document.paths)) {
    for (const operation of Object.values(operations as Record<string, unknown>)) {
      const parameters = (operation as { parameters?: unknown }).parameters;
      if (!Array.isArray(parameters)) continue;
      for (const parameter of parameters as Array<{
        example?: unknown;
        schema?: { example?: unknown };
      }>) {
        if (parameter.example !== undefined || parameter.schema?.example === undefined) continue;
        parameter.example = parameter.schema.example;
        delete parameter.schema.example;
      }
    }
  }
  return document;
}

/** The document of the app's routes as the decorators declare them, finished. */
export function createDaemonDocument(
  app: NestExpressApplication,
  builder: DocumentBuilder,
): OpenAPIObject {
  return finishDaemonDocument(swagger().SwaggerModule.createDocument(app, builder.build()));
}

type SecurityRequirements = Array<Record<string, string[]>>;

/**
 * The document with the security requirements of this daemon only: an operation keeps a bearer
 * scheme only when the daemon has that role's token (`isSet`), and the document declares only
 * those schemes. An open daemon's Swagger UI then shows no lock on its operations and no token
 * to authorize with. The committed document keeps every scheme (optional, `{}` beside it): a
 * daemon may be given any token.
 */
export function securedAsServed(
  document: OpenAPIObject,
  isSet: (role: TokenRole) => boolean,
): OpenAPIObject {
  const open = new Set(
    (Object.entries(TOKEN_ROLES) as Array<[TokenRole, { scheme: string }]>)
      .filter(([role]) => !isSet(role))
      .map(([, { scheme }]) => scheme),
  );
  if (open.size === 0) return document;
  const paths = Object.fromEntries(
    Object.entries(document.paths).map(([path, item]) => [
      path,
      Object.fromEntries(
        Object.entries(item as Record<string, unknown>).map(([method, operation]) => {
          const security = (operation as { security?: SecurityRequirements }).security;
          if (typeof operation !== 'object' || operation === null || !Array.isArray(security)) {
            return [method, operation];
          }
          const kept = security.filter((requirement) =>
            Object.keys(requirement).every((scheme) => !open.has(scheme)),
          );
          const { security: _all, ...rest } = operation as { security?: unknown };
          const closed = kept.some((requirement) => Object.keys(requirement).length > 0);
          return [method, closed ? { ...rest, security: kept } : rest];
        }),
      ),
    ]),
  ) as OpenAPIObject['paths'];
  const schemes = Object.entries(document.components?.securitySchemes ?? {}).filter(
    ([scheme]) => !open.has(scheme),
  );
  const { securitySchemes: _schemes, ...components } = document.components ?? {};
  return {
    ...document,
    paths,
    components:
      schemes.length === 0
        ? components
        : { ...components, securitySchemes: Object.fromEntries(schemes) },
  };
}

/** The daemon's tokens, when it has them (the apps' BearerTokens provider). */
function tokensOf(app: NestExpressApplication): BearerTokens | undefined {
  try {
    return app.get(BearerTokens, { strict: false });
  } catch {
    return undefined;
  }
}

/**
 * Serves Swagger UI at /docs and the document at /docs-json, built on first request. "Try it
 * out" goes first to the daemon that served the page, as the documented base URL only names
 * the host as a variable. Both show only the security this daemon has (`securedAsServed`).
 */
export function serveSwaggerUi(
  buildDocument: (app: NestExpressApplication) => OpenAPIObject,
): (app: NestExpressApplication) => void {
  return (app) =>
    routesBehindPrefix(app, '/docs', () =>
      swagger().SwaggerModule.setup('docs', app, () => buildDocument(app), {
        patchDocumentOnRequest: (_request, _response, document) => {
          const tokens = tokensOf(app);
          const served = tokens
            ? securedAsServed(document, (role) => tokens.isSet(role))
            : document;
          return {
            ...served,
            servers: [
              { url: '/', description: 'This daemon, which served this page.' },
              ...(document.servers ?? []),
            ],
          };
        },
      }),
    );
}
