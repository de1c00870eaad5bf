// class-transformer's @Type reads design metadata, which needs the Reflect polyfill loaded.
import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsObject,
  IsString,
  ValidateBy,
  ValidateNested,
} from 'class-validator';
import {
  IsCollectionName,
  IsDatabaseName,
  IsOptionalNotNull,
} from '../validation/mongo-validators';
import { CollectionsRegexDto } from './collections-regex.dto';

/**
 * One element of `includeNamespaces` / `excludeNamespaces` (the exclude list has the same shape as
 * the include list). Decorators run bottom-up: type checks first (see README).
 */
export class NamespaceFilterDto {
  @IsDatabaseName()
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  database!: string;

  // An empty list would select nothing, which is never what a user means: omit the field to
  // select every collection of the database.
  @OnlyOneCollectionSelector()
  @IsCollectionName({ each: true })
  @IsString({ each: true, message: 'must contain only strings' })
  @ArrayMinSize(1, { message: 'must not be empty; omit it to select every collection' })
  @IsArray({ message: 'must be an array of collection names' })
  @IsOptionalNotNull()
  collections?: string[];

  @ValidateNested()
  @Type(() => CollectionsRegexDto)
  @IsObject({ message: 'must be an object like {"pattern": "^a", "options": "i"}' })
  @IsOptionalNotNull()
  collectionsRegex?: CollectionsRegexDto;
}

/**
 * Giving both selectors leaves it unclear whether they add up or narrow each other; refusing
 * the combination keeps the filter's meaning obvious.
 */
function OnlyOneCollectionSelector() {
  return ValidateBy({
    name: 'onlyOneCollectionSelector',
    validator: {
      validate: (_value, args) =>
        (args?.object as NamespaceFilterDto | undefined)?.collectionsRegex === undefined,
      defaultMessage: () =>
        'cannot be combined with collectionsRegex in the same entry; use one of them',
    },
  });
}
