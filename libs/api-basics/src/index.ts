export * from './openapi-decorators';
export * from './error-body';
export * from './ip-address';
export * from './control-characters';
export * from './body-limits';
