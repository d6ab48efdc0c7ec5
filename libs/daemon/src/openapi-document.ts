import { DocumentBuilder, OpenAPIObject } from '@nestjs/swagger';

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
  const builder = new DocumentBuilder()
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
