// The suite definitions, one file each.
#pragma once

#include "seqlab/exp/cells/lm.h"
#include "seqlab/exp/suite.h"

namespace seqlab {

SuiteSpec hierarchy_suite(bool quick);    // Merrill et al. 2020
SuiteSpec separations_suite(bool quick);  // Bhattamishra et al. 2024
SuiteSpec chomsky_suite(bool quick);      // Deletang et al. 2023
SuiteSpec recall_suite(bool quick);       // Arora et al. 2023, Liu et al. 2023, Jelassi et al. 2024
SuiteSpec mqar_suite(bool quick);         // Arora et al. 2023 (Zoology), lr swept per cell
SuiteSpec flipflop_suite(bool quick);     // Liu et al. 2023, error rates over 20 seeds
SuiteSpec conversion_suite(bool quick);   // Kasai et al. 2021 (T2R), Zhang et al. 2024 (Hedgehog)
SuiteSpec conversion_full_suite(bool quick);  // the same claims on the shipped teacher, 3 seeds
// The conversion reports' generation section (lm_bench rows): the table, and the speed and
// memory plots rendered into plot_dir (exp/suites/conversion.cpp).
std::string bench_table(const std::vector<BenchRow>& bench);
std::string bench_plots(const std::vector<BenchRow>& bench, const std::string& plot_dir);
// The conversion papers' claims (T2R, Hedgehog, LoLCATs, Tied-LoRA), quoted by both reports.
std::string conversion_claims();
SuiteSpec exit_swag_suite(bool quick);        // Schwartz et al. 2020, Maddox et al. 2019
SuiteSpec mae_deq_suite(bool quick);          // Peng et al. 2020 (MAE), Bai et al. 2019 (DEQ)
SuiteSpec objectives_suite(bool quick);       // Li et al. 2024 (LM vs translation pretraining)
SuiteSpec defsent_suite(bool quick);          // Tsukagoshi et al. 2021, Liu 2024 (DefSent+)
SuiteSpec attention_shape_suite(bool quick);  // Zhang et al. 2024 (Hedgehog), spikiness
SuiteSpec tied_lora_suite(bool quick);        // Renduchintala et al. 2023, the configurations

}  // namespace seqlab
