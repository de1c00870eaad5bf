import { IsDefined, IsString } from 'class-validator';
import {
  IsCompilableRegex,
  IsOptionalNotNull,
  IsRegexOptions,
} from '../validation/mongo-validators';

/**
 * `includeNamespaces[].collectionsRegex`: a pattern matched against collection names.
 * Decorators run bottom-up: type checks are last in the source so they run first (see README).
 */
export class CollectionsRegexDto {
  @IsCompilableRegex()
  @IsString({ message: 'must be a string' })
  @IsDefined({ message: 'is required' })
  pattern!: string;

  @IsRegexOptions()
  @IsString({ message: 'must be a string of option letters' })
  @IsOptionalNotNull()
  options?: string;
}
