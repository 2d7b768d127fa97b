/*
 * results_energy.c — result.json's "energy" object (docs/formats.md): the joules on the clock
 * and to the target with the source, what it covers and how often it was sampled, the energy
 * cost where a price per kWh is known; or "measured": false and the reason. Also the energy
 * record resume.ckpt carries across an interruption.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "train/results.h"

double dbk_results_joules_to_target(const dbk_train_report *r) {
    if (!r->energy.measured || r->epochs_to_target < 1) return NAN;
    return r->epochs[r->epochs_to_target - 1].clock_joules;
}

void dbk_results_add_energy(void *json_root, const dbk_train_report *r) {
    const dbk_energy_record *e = &r->energy;
    cJSON *o = cJSON_AddObjectToObject(json_root, "energy");
    cJSON_AddBoolToObject(o, "measured", e->measured);
    if (!e->measured) {
        cJSON_AddStringToObject(o, "reason", e->reason[0] ? e->reason : "no reading");
        return;
    }
    cJSON_AddStringToObject(o, "source", e->source);
    cJSON_AddStringToObject(o, "scope", e->scope);
    cJSON_AddStringToObject(o, "method", e->counter ? "energy counter" : "power sampled and integrated");
    cJSON_AddNumberToObject(o, "sampling_interval_seconds", e->interval);
    cJSON_AddNumberToObject(o, "samples", (double)e->samples);
    cJSON_AddNumberToObject(o, "joules_on_clock", e->joules);
    const double j = dbk_results_joules_to_target(r), price = r->platform.energy_price_per_kwh;
    if (isfinite(j)) {
        cJSON_AddNumberToObject(o, "joules_to_target", j);
        cJSON_AddNumberToObject(o, "kwh_to_target", j / DBK_JOULES_PER_KWH);
    } else {
        cJSON_AddNullToObject(o, "joules_to_target");
        cJSON_AddNullToObject(o, "kwh_to_target");
    }
    if (price > 0) {
        cJSON_AddNumberToObject(o, "price_per_kwh", price);
        cJSON_AddStringToObject(o, "price_source", r->platform.energy_price_source);
    } else {
        cJSON_AddNullToObject(o, "price_per_kwh");
    }
    if (price > 0 && isfinite(j)) cJSON_AddNumberToObject(o, "cost_to_target", j / DBK_JOULES_PER_KWH * price);
    else cJSON_AddNullToObject(o, "cost_to_target");
}

void dbk_results_add_energy_state(void *json_root, const dbk_train_report *r) {
    const dbk_energy_record *e = &r->energy;
    cJSON *o = cJSON_AddObjectToObject(json_root, "energy");
    cJSON_AddBoolToObject(o, "measured", e->measured);
    cJSON_AddStringToObject(o, "reason", e->reason);
    cJSON_AddStringToObject(o, "scope", e->scope);
    cJSON_AddNumberToObject(o, "joules", e->joules);
    cJSON_AddNumberToObject(o, "samples", (double)e->samples);
}

void dbk_results_read_energy_state(const void *json_root, dbk_train_report *r) {
    dbk_energy_record *e = &r->energy;
    memset(e, 0, sizeof *e);
    const cJSON *o = cJSON_GetObjectItemCaseSensitive(json_root, "energy");
    const cJSON *j = cJSON_GetObjectItemCaseSensitive(o, "joules");
    const cJSON *scope = cJSON_GetObjectItemCaseSensitive(o, "scope"), *why = cJSON_GetObjectItemCaseSensitive(o, "reason");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(o, "samples");
    if (!cJSON_IsObject(o) || !cJSON_IsNumber(j) || !cJSON_IsString(scope) || !cJSON_IsString(why)) {
        snprintf(e->reason, sizeof e->reason, "resume.ckpt holds no energy record");
        return;
    }
    e->measured = cJSON_IsTrue(cJSON_GetObjectItemCaseSensitive(o, "measured"));
    snprintf(e->reason, sizeof e->reason, "%s", why->valuestring);
    snprintf(e->scope, sizeof e->scope, "%s", scope->valuestring);
    e->joules = j->valuedouble;
    e->samples = cJSON_IsNumber(n) ? (long)n->valuedouble : 0;
}

void dbk_results_print_energy(FILE *out, const dbk_train_report *r) {
    const dbk_energy_record *e = &r->energy;
    if (!e->measured) {
        fprintf(out, "energy not measured: %s\n", e->reason[0] ? e->reason : "no reading");
        return;
    }
    const double j = dbk_results_joules_to_target(r), price = r->platform.energy_price_per_kwh;
    const double shown = isfinite(j) ? j : e->joules;
    fprintf(out, "energy %s: %.1f J (%.4g kWh)", isfinite(j) ? "to the target" : "on the clock", shown,
            shown / DBK_JOULES_PER_KWH);
    if (price > 0) fprintf(out, ", USD %.3g at USD %.3g/kWh (%s)", shown / DBK_JOULES_PER_KWH * price, price,
                           r->platform.energy_price_source);
    if (e->counter) fprintf(out, "; %s\n", e->scope);
    else fprintf(out, "; power sampled every %.2g s: %s\n", e->interval, e->scope);
}
