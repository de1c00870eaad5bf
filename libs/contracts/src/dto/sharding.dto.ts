// class-transformer's @Type reads design metadata, which needs the Reflect polyfill loaded.
import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsArray, IsDefined, IsObject, ValidateNested } from 'class-validator';
import { IsOptionalNotNull, IsStrictBoolean } from '../validation/mongo-validators';
import { ShardingEntryDto } from './sharding-entry.dto';

/**
 * The `sharding` object of the start body (replica set → sharded cluster only).
 * Decorators run bottom-up: type checks first (see README).
 */
export class ShardingDto {
  @IsStrictBoolean()
  @IsOptionalNotNull()
  createSupportingIndexes?: boolean;

  // Required, but may be empty: an empty array shards nothing.
  @ValidateNested({ each: true })
  @Type(() => ShardingEntryDto)
  @IsObject({ each: true, message: 'must contain only objects' })
  @IsArray({ message: 'must be an array of sharding entries' })
  @IsDefined({ message: 'is required (use [] to shard nothing)' })
  shardingEntries!: ShardingEntryDto[];
}
