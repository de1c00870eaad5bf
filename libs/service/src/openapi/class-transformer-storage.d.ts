/** class-transformer's `@Type` metadata storage: shipped as cjs/storage, typed as types/storage. */
declare module 'class-transformer/cjs/storage' {
  export * from 'class-transformer/types/storage';
}
