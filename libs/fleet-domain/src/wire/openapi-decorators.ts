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

export type { ApiPropertyOptions } from '@nestjs/swagger';

export const ApiProperty = deferred('ApiProperty');
export const ApiPropertyOptional = deferred('ApiPropertyOptional');
export const ApiResponseProperty = deferred('ApiResponseProperty');
export const ApiHideProperty = deferred('ApiHideProperty');
export const ApiExtraModels = deferred('ApiExtraModels');
export const ApiSchema = deferred('ApiSchema');
export const ApiTags = deferred('ApiTags');
export const ApiOperation = deferred('ApiOperation');
export const ApiParam = deferred('ApiParam');
export const ApiQuery = deferred('ApiQuery');
export const ApiBody = deferred('ApiBody');
export const ApiHeader = deferred('ApiHeader');
export const ApiHeaders = deferred('ApiHeaders');
export const ApiConsumes = deferred('ApiConsumes');
export const ApiProduces = deferred('ApiProduces');
export const ApiExtension = deferred('ApiExtension');
export const ApiExcludeEndpoint = deferred('ApiExcludeEndpoint');
export const ApiExcludeController = deferred('ApiExcludeController');
export const ApiSecurity = deferred('ApiSecurity');
export const ApiBearerAuth = deferred('ApiBearerAuth');
export const ApiBasicAuth = deferred('ApiBasicAuth');
export const ApiResponse = deferred('ApiResponse');
export const ApiDefaultResponse = deferred('ApiDefaultResponse');
export const ApiOkResponse = deferred('ApiOkResponse');
export const ApiCreatedResponse = deferred('ApiCreatedResponse');
export const ApiAcceptedResponse = deferred('ApiAcceptedResponse');
export const ApiNoContentResponse = deferred('ApiNoContentResponse');
export const ApiBadRequestResponse = deferred('ApiBadRequestResponse');
export const ApiUnauthorizedResponse = deferred('ApiUnauthorizedResponse');
export const ApiForbiddenResponse = deferred('ApiForbiddenResponse');
export const ApiNotFoundResponse = deferred('ApiNotFoundResponse');
export const ApiConflictResponse = deferred('ApiConflictResponse');
export const ApiPayloadTooLargeResponse = deferred('ApiPayloadTooLargeResponse');
export const ApiUnsupportedMediaTypeResponse = deferred('ApiUnsupportedMediaTypeResponse');
export const ApiUnprocessableEntityResponse = deferred('ApiUnprocessableEntityResponse');
export const ApiTooManyRequestsResponse = deferred('ApiTooManyRequestsResponse');
export const ApiInternalServerErrorResponse = deferred('ApiInternalServerErrorResponse');
export const ApiBadGatewayResponse = deferred('ApiBadGatewayResponse');
export const ApiServiceUnavailableResponse = deferred('ApiServiceUnavailableResponse');
export const ApiGatewayTimeoutResponse = deferred('ApiGatewayTimeoutResponse');
