export * from './api-schemas';
export * from './api-operations';
export * from './openapi-document';
