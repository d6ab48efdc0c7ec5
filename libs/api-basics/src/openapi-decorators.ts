/**
 * The @nestjs/swagger decorators, deferred: each use is recorded and applied only when an
 * OpenAPI document is built (applyOpenApiDecorators, called by the document builders). A
 * running agent never builds one (it serves the committed document), so it never loads
 * @nestjs/swagger: about 3.5 MB of every node's memory. Import the decorators from here, not
 * from @nestjs/swagger, in wire classes and in controllers the agent loads.
 */
// The wire classes' other decorators (class-transformer's @Type) read design-time types through
// Reflect.getMetadata; @nestjs/swagger used to load this for them.
import 'reflect-metadata';
import type * as Swagger from '@nestjs/swagger';

type SwaggerModuleExports = typeof Swagger;
type DecoratorFactoryName = Extract<keyof SwaggerModuleExports, `Api${string}`>;

const recorded: Array<(swagger: SwaggerModuleExports) => void> = [];
let loaded: SwaggerModuleExports | undefined;

function deferred<K extends DecoratorFactoryName>(name: K): SwaggerModuleExports[K] {
  const factory =
    (...options: unknown[]) =>
    (...target: unknown[]): void => {
      const apply = (swagger: SwaggerModuleExports): void => {
        // The real factory of the same name, with the same arguments, on the same target.
        (swagger[name] as (...args: unknown[]) => (...args: unknown[]) => unknown)(...options)(
          ...target,
        );
      };
      if (loaded) apply(loaded);
      else recorded.push(apply);
    };
  return factory as SwaggerModuleExports[K];
}

/**
 * Loads @nestjs/swagger and applies every decorator recorded so far, in the order the classes
 * declared them (any later one is applied at once). Called by whoever builds a document.
 */
export function applyOpenApiDecorators(): void {
  // Loaded here, on demand, so that importing this file costs nothing.
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  loaded ??= require('@nestjs/swagger') as SwaggerModuleExports;
  for (const apply of recorded.splice(0)) apply(loaded);
}

// Only those in use (wire classes, controllers, @app/daemon): one line each, added when needed.
export const ApiProperty = deferred('ApiProperty');
export const ApiTags = deferred('ApiTags');
export const ApiOperation = deferred('ApiOperation');
export const ApiHeader = deferred('ApiHeader');
export const ApiSecurity = deferred('ApiSecurity');
export const ApiResponse = deferred('ApiResponse');
export const ApiOkResponse = deferred('ApiOkResponse');
export const ApiCreatedResponse = deferred('ApiCreatedResponse');
export const ApiNoContentResponse = deferred('ApiNoContentResponse');
export const ApiAcceptedResponse = deferred('ApiAcceptedResponse');
export const ApiExcludeController = deferred('ApiExcludeController');
