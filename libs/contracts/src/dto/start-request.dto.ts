// class-transformer's @Type reads design metadata, which needs the Reflect polyfill loaded.
import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  ArrayMinSize,
  IsArray,
  IsDefined,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsString,
  ValidateNested,
} from 'class-validator';
import { IsOptionalNotNull, IsStrictBoolean } from '../validation/mongo-validators';
import { NamespaceFilterDto } from './namespace-filter.dto';
import { ShardingDto } from './sharding.dto';
import { VerificationDto } from './verification.dto';

export const BUILD_INDEXES_MODES = ['beforeDataCopy', 'never'] as const;

/**
 * The start body exactly as sent. Unknown fields are rejected at every level
 * by the validator options in `validateStartRequest`; defaults are applied there, not here, so
 * this class only describes what a client may send. Decorators run bottom-up: type checks first.
 */
export class StartRequestDto {
  @IsNotEmpty({ message: 'must not be empty' })
  @IsString({ message: 'must be a string naming a configured cluster' })
  @IsDefined({ message: 'is required' })
  source!: string;

  @IsNotEmpty({ message: 'must not be empty' })
  @IsString({ message: 'must be a string naming a configured cluster' })
  @IsDefined({ message: 'is required' })
  destination!: string;

  @IsIn(BUILD_INDEXES_MODES, { message: `must be one of ${BUILD_INDEXES_MODES.join(', ')}` })
  @IsOptionalNotNull()
  buildIndexes?: (typeof BUILD_INDEXES_MODES)[number];

  @IsStrictBoolean()
  @IsOptionalNotNull()
  enableUserWriteBlocking?: boolean;

  @ValidateNested({ each: true })
  @Type(() => NamespaceFilterDto)
  @IsObject({ each: true, message: 'must contain only objects like {"database": "db"}' })
  @ArrayMinSize(1, { message: 'must not be empty; omit it to sync every database' })
  @IsArray({ message: 'must be an array of namespace filter entries' })
  @IsOptionalNotNull()
  includeNamespaces?: NamespaceFilterDto[];

  @ValidateNested({ each: true })
  @Type(() => NamespaceFilterDto)
  @IsObject({ each: true, message: 'must contain only objects like {"database": "db"}' })
  @ArrayMinSize(1, { message: 'must not be empty; omit it to exclude nothing' })
  @IsArray({ message: 'must be an array of namespace filter entries' })
  @IsOptionalNotNull()
  excludeNamespaces?: NamespaceFilterDto[];

  @IsStrictBoolean()
  @IsOptionalNotNull()
  reversible?: boolean;

  @ValidateNested()
  @Type(() => ShardingDto)
  @IsObject({ message: 'must be an object with shardingEntries' })
  @IsOptionalNotNull()
  sharding?: ShardingDto;

  /** Not in the seed API: `{enabled: false}` turns the embedded verifier off (on by default). */
  @ValidateNested()
  @Type(() => VerificationDto)
  @IsObject({ message: 'must be an object like {"enabled": false}' })
  @IsOptionalNotNull()
  verification?: VerificationDto;
}
