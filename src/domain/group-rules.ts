/**
 * What dcmanager's server accepts of a subcloud group, and the words of its refusals (a 400, so
 * the client exits 1). subcloud_group.py's SubcloudGroupsController.post and .patch check, in
 * this order, the name (utils.validate_name, Default prohibited), the description, the update
 * apply type and the window; the client sends a description of 'No description provided' and
 * 'parallel' unless given, and on update only what is given and not empty.
 */
import { APPLY_TYPES, type ApplyType } from './types.js';

/** utils.validate_name's default: the characters of a regular expression. */
const REGEX_CHARS = new Set('.*+?|()[]{}^$');
const MAX_NAME = 255;
/** _validate_description refuses a description of this length or more. */
const MAX_DESCRIPTION = 255;

export const INVALID_NAME = 'Invalid group name';
export const INVALID_DESCRIPTION = 'Invalid group description';
export const INVALID_APPLY_TYPE = 'Invalid group update_apply_type';

/**
 * utils.validate_name(name, prohibited_name_list=['Default']): not empty, not all digits, at most
 * 255 characters, none of a regular expression's, and not Default in any case (it compares
 * lower-cased).
 */
export function groupNameValid(name: string): boolean {
  if (name === '') return false;
  if (/^\p{Nd}+$/u.test(name)) return false;
  if ([...name].length > MAX_NAME) return false;
  if ([...name].some((c) => REGEX_CHARS.has(c))) return false;
  return name.toLowerCase() !== 'default';
}

/** _validate_description: not empty, fewer than 255 characters. */
export function groupDescriptionValid(description: string): boolean {
  return description !== '' && [...description].length < MAX_DESCRIPTION;
}

/** _validate_update_apply_type: parallel or serial. */
export function groupApplyType(value: string): ApplyType | null {
  return (APPLY_TYPES as readonly string[]).includes(value) ? (value as ApplyType) : null;
}
