/* nni_graph.h: NNI's network-morphism graph JSON (what NNI's Graph.json_out
 * writes, the format of AIPerf's resnet50.json) read into a struct arch, so
 * that an NNI or AIPerf model can start a search or be counted by aah's
 * rules. docs/aiperf.md says how each Stub layer maps. */
#ifndef AAH_NNI_GRAPH_H
#define AAH_NNI_GRAPH_H

#include <cjson/cJSON.h>

#include "arch.h" /* struct arch */

/* Whether doc looks like an NNI graph (it has "layer_list" and "node_list"). */
int nni_graph_is(const cJSON *doc);

/* Convert doc into a (released by the caller, also on error), checked with
 * arch_check. Every layer's output shape must equal the node_list's shape of
 * its output node; errors name the file, the NNI layer id and the field.
 * Layer ids become "<aah type>_<NNI layer id>" ("conv2d_36"). */
int nni_graph_read(struct arch *a, const cJSON *doc, const char *file);

/* The file at path: nni_graph_read when it is an NNI graph, arch_parse
 * (aah-arch/1) otherwise; what tuner.initialArch names. */
int nni_graph_load(struct arch *a, const char *path);

#endif
