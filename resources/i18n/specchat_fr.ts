<?xml version="1.0" encoding="utf-8"?>
<!DOCTYPE TS>
<TS version="2.1" language="fr_FR" sourcelanguage="en">
<context>
    <name>AnswerWidget</name>
    <message>
        <source>Tokens</source>
        <translation>Jetons</translation>
    </message>
    <message>
        <source>Show the answer token by token, highlighted by where each token came from, instead of rendered as Markdown</source>
        <translation>Afficher la réponse jeton par jeton, colorée selon l’origine de chaque jeton, au lieu du rendu Markdown</translation>
    </message>
    <message>
        <source>Show all</source>
        <translation>Tout afficher</translation>
    </message>
    <message>
        <source>Draw the whole answer (a very long one takes a while)</source>
        <translation>Afficher toute la réponse (une très longue prend un moment)</translation>
    </message>
    <message>
        <source>Copy</source>
        <translation>Copier</translation>
    </message>
    <message>
        <source>Copy this answer as Markdown</source>
        <translation>Copier cette réponse en Markdown</translation>
    </message>
    <message>
        <source>Regenerate</source>
        <translation>Régénérer</translation>
    </message>
    <message>
        <source>Answer the same question again with the current settings (replaces this answer and the messages after it)</source>
        <translation>Répondre de nouveau à la même question avec les réglages actuels (remplace cette réponse et les messages qui la suivent)</translation>
    </message>
    <message>
        <source>Continue</source>
        <translation>Continuer</translation>
    </message>
    <message>
        <source>Go on generating this cut answer from where it stopped</source>
        <translation>Reprendre la génération de cette réponse interrompue là où elle s’est arrêtée</translation>
    </message>
    <message>
        <source>Compare</source>
        <translation>Comparer</translation>
    </message>
    <message>
        <source>Run this answer again the other way (with / without speculation) and compare</source>
        <translation>Relancer cette réponse dans l’autre mode (avec / sans spéculation) et comparer</translation>
    </message>
    <message>
        <source>Why?</source>
        <translation>Pourquoi ?</translation>
    </message>
    <message>
        <source>Why was this answer faster or slower? Acceptance, costs, charts</source>
        <translation>Pourquoi cette réponse a-t-elle été plus rapide ou plus lente ? Acceptation, coûts, graphiques</translation>
    </message>
    <message>
        <source>Try drafters…</source>
        <translation>Essayer des brouillons…</translation>
    </message>
    <message>
        <source>Answer this again with no speculation, prompt lookup and the draft model at a few k, side by side</source>
        <translation>Répondre de nouveau sans spéculation, avec la recherche dans le prompt et avec le modèle brouillon pour quelques valeurs de k, côte à côte</translation>
    </message>
    <message>
        <source>A long answer: showing its first {0} of {1} tokens.</source>
        <translation>Une longue réponse : ses {0} premiers jetons sur {1} sont affichés.</translation>
    </message>
    <message>
        <source>A long answer: showing its first {0} characters.</source>
        <translation>Une longue réponse : ses {0} premiers caractères sont affichés.</translation>
    </message>
    <message>
        <source>Assistant · {0}</source>
        <translation>Assistant · {0}</translation>
    </message>
</context>
<context>
    <name>AppSettings</name>
    <message>
        <source>The temperature must be from 0 to {0} (it is {1}): higher makes word salad.</source>
        <translation>La température doit être comprise entre 0 et {0} (elle vaut {1}) : au-delà, le texte devient une salade de mots.</translation>
    </message>
    <message>
        <source>The largest adaptive k ({0}) must be at least k ({1}): raise it, or lower k.</source>
        <translation>Le plus grand k adaptatif ({0}) doit valoir au moins k ({1}) : augmentez-le, ou baissez k.</translation>
    </message>
</context>
<context>
    <name>Charts</name>
    <message>
        <source>Acceptance by draft position</source>
        <translation>Acceptation selon la position dans le brouillon</translation>
    </message>
    <message>
        <source>draft position</source>
        <translation>position dans le brouillon</translation>
    </message>
    <message>
        <source>accepted</source>
        <translation>acceptés</translation>
    </message>
    <message>
        <source>acceptance α = {0}</source>
        <translation>acceptation α = {0}</translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation>Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>tokens from one pass</source>
        <translation>jetons issus d’une passe</translation>
    </message>
    <message>
        <source>passes</source>
        <translation>passes</translation>
    </message>
    <message>
        <source>Timeline of target passes</source>
        <translation>Chronologie des passes du modèle cible</translation>
    </message>
    <message>
        <source>wall-clock time (s)</source>
        <translation>temps réel (s)</translation>
    </message>
    <message>
        <source>drafting</source>
        <translation>génération du brouillon</translation>
    </message>
    <message>
        <source>target pass (verify)</source>
        <translation>passe cible (vérification)</translation>
    </message>
    <message>
        <source>speculative</source>
        <translation>spéculatif</translation>
    </message>
    <message>
        <source>plain</source>
        <translation>simple</translation>
    </message>
    <message>
        <source>What if the draft agreed more often?</source>
        <translation>Et si le brouillon concordait plus souvent ?</translation>
    </message>
    <message>
        <source>acceptance α</source>
        <translation>acceptation α</translation>
    </message>
    <message>
        <source>decode speed-up over plain decoding (×)</source>
        <translation>accélération du décodage par rapport au décodage simple (×)</translation>
    </message>
    <message>
        <source>break-even (1×)</source>
        <translation>seuil de rentabilité (1×)</translation>
    </message>
    <message>
        <source>decode speed-up, measured</source>
        <translation>accélération du décodage, mesurée</translation>
    </message>
    <message>
        <source>decode speed-up, predicted</source>
        <translation>accélération du décodage, prédite</translation>
    </message>
    <message>
        <source>decode speed-up (×)</source>
        <translation>accélération du décodage (×)</translation>
    </message>
    <message>
        <source>this run (its mix of draft lengths)</source>
        <translation>cette exécution (son mélange de longueurs de brouillon)</translation>
    </message>
    <message>
        <source>not used</source>
        <translation>non utilisée</translation>
    </message>
    <message>
        <source>accepted, of the drafts judged here (earlier ones accepted)</source>
        <translation>acceptés, parmi les brouillons jugés ici (les précédents acceptés)</translation>
    </message>
    <message>
        <source>accepted, of the drafts proposed here</source>
        <translation>acceptés, parmi les brouillons proposés ici</translation>
    </message>
    <message>
        <source>all positions: drafts accepted, of all proposed = {0}</source>
        <translation>toutes positions : brouillons acceptés, sur tous les proposés = {0}</translation>
    </message>
    <message>
        <source>k = {0} (this run)</source>
        <translation>k = {0} (cette exécution)</translation>
    </message>
    <message>
        <source>k = {0} every pass (cost interpolated)</source>
        <translation>k = {0} à chaque passe (coût interpolé)</translation>
    </message>
    <message>
        <source>k = {0} every pass</source>
        <translation>k = {0} à chaque passe</translation>
    </message>
    <message>
        <source>Each drafter on the what-if curves</source>
        <translation>Chaque brouillon sur les courbes « et si »</translation>
    </message>
</context>
<context>
    <name>ChatController</name>
    <message>
        <source>Thinking…</source>
        <translation>Réflexion…</translation>
    </message>
    <message>
        <source>Waiting for the model to load…</source>
        <translation>En attente du chargement du modèle…</translation>
    </message>
    <message>
        <source>This answer was saved without its settings: regenerate it instead.</source>
        <translation>Cette réponse a été enregistrée sans ses réglages : régénérez-la plutôt.</translation>
    </message>
    <message>
        <source>This answer's saved settings are damaged ({0}): regenerate it instead.</source>
        <translation>Les réglages enregistrés de cette réponse sont abîmés ({0}) : régénérez-la plutôt.</translation>
    </message>
    <message>
        <source>Reading the saved conversations for the Earlier conversations drafter…</source>
        <translation>Lecture des conversations enregistrées pour le brouillon Conversations antérieures…</translation>
    </message>
    <message>
        <source>Could not save the conversation: {0}</source>
        <translation>Impossible d’enregistrer la conversation : {0}</translation>
    </message>
</context>
<context>
    <name>ChatView</name>
    <message>
        <source>Ask something. Tokens the drafter guessed right and the target accepted are highlighted and underlined; hover a token to see where it came from.</source>
        <translation>Posez une question. Les jetons bien devinés par le brouillon et acceptés par le modèle cible sont surlignés et soulignés ; survolez un jeton pour voir d’où il vient.</translation>
    </message>
</context>
<context>
    <name>CompareDialog</name>
    <message>
        <source>Compare: with and without speculation</source>
        <translation>Comparer : avec et sans spéculation</translation>
    </message>
    <message>
        <source>Tokens</source>
        <translation>Jetons</translation>
    </message>
    <message>
        <source>Show both answers token by token (where they first differ is marked) instead of rendered as Markdown</source>
        <translation>Afficher les deux réponses jeton par jeton (là où elles diffèrent d’abord est marqué) au lieu du rendu Markdown</translation>
    </message>
    <message>
        <source>With speculation — {0}</source>
        <translation>Avec spéculation — {0}</translation>
    </message>
    <message>
        <source>Without speculation — the plain endpoint</source>
        <translation>Sans spéculation — le point d’accès simple</translation>
    </message>
    <message>
        <source>Without speculation — target only</source>
        <translation>Sans spéculation — modèle cible seul</translation>
    </message>
    <message>
        <source>Character-level differences (struck through: only with speculation; underlined: only without)</source>
        <translation>Différences caractère par caractère (barré : seulement avec spéculation ; souligné : seulement sans)</translation>
    </message>
    <message>
        <source>Why?</source>
        <translation>Pourquoi ?</translation>
    </message>
    <message>
        <source>Why was speculation faster or slower here? Acceptance, costs, charts</source>
        <translation>Pourquoi la spéculation a-t-elle été plus rapide ou plus lente ici ? Acceptation, coûts, graphiques</translation>
    </message>
    <message>
        <source>{0} (not comparable)</source>
        <translation>{0} (non comparable)</translation>
    </message>
    <message>
        <source>Wall time</source>
        <translation>Durée réelle</translation>
    </message>
    <message>
        <source>{0} s</source>
        <translation>{0} s</translation>
    </message>
    <message>
        <source>Tokens/s</source>
        <translation>Jetons/s</translation>
    </message>
    <message>
        <source>Decode speed-up (prefill left out)</source>
        <translation>Accélération du décodage (préremplissage exclu)</translation>
    </message>
    <message>
        <source>Whole-run speed-up (prefill included)</source>
        <translation>Accélération de l’exécution entière (préremplissage inclus)</translation>
    </message>
    <message>
        <source>New tokens</source>
        <translation>Nouveaux jetons</translation>
    </message>
    <message>
        <source>Target passes</source>
        <translation>Passes du modèle cible</translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation>Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>Acceptance α (per position the target judged)</source>
        <translation>Acceptation α (par position jugée par le modèle cible)</translation>
    </message>
    <message>
        <source>Drafts accepted, of all proposed</source>
        <translation>Brouillons acceptés, sur tous ceux proposés</translation>
    </message>
    <message>
        <source>No differences.</source>
        <translation>Aucune différence.</translation>
    </message>
    <message>
        <source>{ratio} faster decoding</source>
        <translation>décodage {ratio} plus rapide</translation>
    </message>
    <message>
        <source>slower decoding: {ratio} the plain speed</source>
        <translation>décodage plus lent : {ratio} la vitesse simple</translation>
    </message>
    <message>
        <source>decoding about as fast ({ratio})</source>
        <translation>décodage à peu près aussi rapide ({ratio})</translation>
    </message>
    <message>
        <source>speed unknown</source>
        <translation>vitesse inconnue</translation>
    </message>
    <message>
        <source>speed not comparable</source>
        <translation>vitesse non comparable</translation>
    </message>
    <message>
        <source>The decode speed-up measured {ratio}, which is not shown as a result: the machine's load changed between the run with speculation and the run without ({evidence}). Compare again on a quieter machine.</source>
        <translation>L'accélération du décodage mesurée, {ratio}, n'est pas présentée comme un résultat : la charge de la machine a changé entre l'exécution avec spéculation et celle sans ({evidence}). Comparez à nouveau sur une machine plus calme.</translation>
    </message>
    <message>
        <source>The decode speed-up measured {ratio}, above the {ceiling} these passes allow (tokens per pass, each pass costing at least a plain one): the runs did not run under like conditions, so it is not shown as a result. Compare again.</source>
        <translation>L'accélération du décodage mesurée, {ratio}, dépasse les {ceiling} que ces passes permettent (jetons par passe, chaque passe coûtant au moins une passe simple) : les exécutions n'ont pas eu lieu dans les mêmes conditions, elle n'est donc pas présentée comme un résultat. Comparez à nouveau.</translation>
    </message>
    <message>
        <source>a plain pass timed before each run: {value} of the other</source>
        <translation>une passe simple chronométrée avant chaque exécution : {value} de l'autre</translation>
    </message>
    <message>
        <source>the same one-token pass inside each run: {value} of the other</source>
        <translation>la même passe d'un jeton dans chaque exécution : {value} de l'autre</translation>
    </message>
    <message>
        <source>other processes: {before} then {after} busy cores</source>
        <translation>autres processus : {before} puis {after} cœurs occupés</translation>
    </message>
    <message>
        <source>Both columns are fresh reruns of this answer (their speeds and drafts can differ from the answer's own stats line); the speed-ups divide the first column by the second.</source>
        <translation>Les deux colonnes sont de nouvelles exécutions de cette réponse (leurs vitesses et brouillons peuvent différer de la ligne de statistiques de la réponse) ; les accélérations divisent la première colonne par la seconde.</translation>
    </message>
    <message>
        <source>Identical answer · {speed}</source>
        <translation>Réponse identique · {speed}</translation>
    </message>
    <message>
        <source>Different sample · {speed}</source>
        <translation>Échantillon différent · {speed}</translation>
    </message>
    <message>
        <source>Answers differ from token {token} · {speed}</source>
        <translation>Les réponses diffèrent à partir du jeton {token} · {speed}</translation>
    </message>
    <message>
        <source>They first differ at token {token} (character {char})</source>
        <translation>Elles diffèrent pour la première fois au jeton {token} (caractère {char})</translation>
    </message>
    <message>
        <source>Both runs produced exactly the same tokens: speculation changed the speed, not the answer.</source>
        <translation>Les deux exécutions ont produit exactement les mêmes jetons : la spéculation a changé la vitesse, pas la réponse.</translation>
    </message>
    <message>
        <source>{where}, where the target's two best tokens were only {margin} logits apart, within {threshold} ({steps} steps of {dtype} at a logit of {top}): a near tie resolved differently by batched arithmetic — numerics, not a bug.</source>
        <translation>{where}, où les deux meilleurs jetons du modèle cible n’étaient séparés que de {margin} logits, moins de {threshold} ({steps} pas de {dtype} à un logit de {top}) : une quasi-égalité tranchée différemment par le calcul par lots — une question de précision numérique, pas un bug.</translation>
    </message>
    <message>
        <source>{where}. These answers were sampled without seed-invariant mode, so different text is expected; the distribution is the same.</source>
        <translation>{where}. Ces réponses ont été échantillonnées sans le mode invariant à la graine, un texte différent est donc normal ; la distribution est la même.</translation>
    </message>
    <message>
        <source>{where}, where the target was confident: its two best tokens were {margin} logits apart, more than {dtype} rounding can flip ({threshold}). Greedy decoding should never diverge like this: this looks like a bug, please report it.</source>
        <translation>{where}, alors que le modèle cible était sûr de lui : ses deux meilleurs jetons étaient séparés de {margin} logits, plus que ce que l’arrondi {dtype} peut inverser ({threshold}). Le décodage glouton ne devrait jamais diverger ainsi : cela ressemble à un bug, merci de le signaler.</translation>
    </message>
    <message>
        <source>{where} (the target's two best tokens {margin} logits apart). Both runs verified on exact kernels, where a checked block gives the very logits of one-token decoding, so greedy answers cannot differ, not even at a near tie: this is a defect, please report it.</source>
        <translation>{where} (les deux meilleurs jetons de la cible à {margin} logits l'un de l'autre). Les deux exécutions ont vérifié avec des noyaux exacts, où un bloc vérifié donne exactement les logits du décodage jeton par jeton : des réponses gloutonnes ne peuvent pas différer, même à une quasi-égalité. C'est un défaut, merci de le signaler.</translation>
    </message>
    <message>
        <source>Speculation was slower here: only {acceptance} of the drafts were accepted ({per_pass} tokens per target pass), too few to pay for drafting and verifying them.</source>
        <translation>La spéculation a été plus lente ici : seuls {acceptance} des brouillons ont été acceptés ({per_pass} jetons par passe du modèle cible), trop peu pour compenser le coût de leur génération et de leur vérification.</translation>
    </message>
    <message>
        <source>Speculation was slower here although {acceptance} of the drafts were accepted: each step spent as long drafting as {overhead} plain target steps ({c} per draft), which ate the gain of {per_pass} tokens per target pass.</source>
        <translation>La spéculation a été plus lente ici bien que {acceptance} des brouillons aient été acceptés : chaque étape a passé autant de temps à générer les brouillons que {overhead} étapes simples du modèle cible ({c} par brouillon), ce qui a absorbé le gain de {per_pass} jetons par passe du modèle cible.</translation>
    </message>
    <message>
        <source>Speculation was slower here although {acceptance} of the drafts were accepted: one verify pass over the drafts cost {v} plain target steps, which ate the gain of {per_pass} tokens per target pass.</source>
        <translation>La spéculation a été plus lente ici bien que {acceptance} des brouillons aient été acceptés : une passe de vérification des brouillons a coûté {v} étapes simples du modèle cible, ce qui a absorbé le gain de {per_pass} jetons par passe du modèle cible.</translation>
    </message>
    <message>
        <source>This answer was saved without a record of the models that made it, so both runs were made again with the models loaded now ({now}).</source>
        <translation>Cette réponse a été enregistrée sans indiquer les modèles qui l’ont produite : les deux exécutions ont donc été refaites avec les modèles chargés actuellement ({now}).</translation>
    </message>
    <message>
        <source>This answer was made by {then}; the models loaded now are {now}. Both runs were made again with the loaded models: this compares them, not the stored answer.</source>
        <translation>Cette réponse a été produite par {then} ; les modèles chargés actuellement sont {now}. Les deux exécutions ont été refaites avec les modèles chargés : cette comparaison porte sur eux, pas sur la réponse enregistrée.</translation>
    </message>
    <message>
        <source>The run with speculation differs from the stored answer from token {token}, although the same models and settings made both.</source>
        <translation>L’exécution avec spéculation diffère de la réponse enregistrée à partir du jeton {token}, bien que les mêmes modèles et réglages aient produit les deux.</translation>
    </message>
    <message>
        <source>This answer was sampled with automatic k, which does not repeat an answer from its seed (the draws depend on how many drafts each step verified): the runs are new samples, not a check of the stored answer.</source>
        <translation>Cette réponse a été échantillonnée avec k automatique, qui ne redonne pas une réponse à partir de sa graine (les tirages dépendent du nombre de brouillons vérifiés à chaque étape) : les deux exécutions sont de nouveaux échantillons, pas une vérification de la réponse enregistrée.</translation>
    </message>
    <message>
        <source>The speculative endpoint ({server}) drafted nothing for this conversation: it may not be started with speculation, or its drafter found nothing to propose.</source>
        <translation>Le point d'accès spéculatif ({server}) n'a rien proposé pour cette conversation : il n'est peut-être pas lancé avec la spéculation, ou son brouillon n'a rien trouvé à proposer.</translation>
    </message>
    <message>
        <source>The speculative endpoint ({server}) sent no speculation figures: start vLLM with --speculative-config and {flag} to see what it drafted.</source>
        <translation>Le point d'accès spéculatif ({server}) n'a envoyé aucun chiffre de spéculation : lancez vLLM avec --speculative-config et {flag} pour voir ce qu'il a proposé.</translation>
    </message>
    <message>
        <source>The plain endpoint ({server}) drafted too ({accepted} of {drafted} drafts accepted): this compares two speculative servers, not with and without.</source>
        <translation>Le point d'accès sans spéculation ({server}) a aussi proposé des brouillons ({accepted} acceptés sur {drafted}) : ceci compare deux serveurs spéculatifs, pas avec et sans.</translation>
    </message>
    <message>
        <source>{server} reports no speculation figures: SpecChat cannot tell whether it drafted.</source>
        <translation>{server} ne donne aucun chiffre de spéculation : SpecChat ne peut pas savoir s'il a proposé des brouillons.</translation>
    </message>
    <message>
        <source>Both arms name the same server and model: nothing tells them apart.</source>
        <translation>Les deux bras désignent le même serveur et le même modèle : rien ne les distingue.</translation>
    </message>
</context>
<context>
    <name>Composer</name>
    <message>
        <source>Type a message — Enter sends, Shift+Enter for a new line</source>
        <translation>Écrivez un message — Entrée pour envoyer, Maj+Entrée pour aller à la ligne</translation>
    </message>
</context>
<context>
    <name>ContextMeter</name>
    <message>
        <source>Prompt and answer tokens of this conversation against what the target model can hold</source>
        <translation>Jetons des messages et des réponses de cette conversation, rapportés à ce que le modèle cible peut contenir</translation>
    </message>
</context>
<context>
    <name>ConversationPanel</name>
    <message>
        <source>Search conversations</source>
        <translation>Rechercher dans les conversations</translation>
    </message>
    <message>
        <source>Shows the chats whose title or messages contain every word</source>
        <translation>Affiche les conversations dont le titre ou les messages contiennent tous les mots</translation>
    </message>
    <message>
        <source>Undo</source>
        <translation>Annuler</translation>
    </message>
    <message>
        <source>Deleted “{0}”.</source>
        <translation>« {0} » supprimée.</translation>
    </message>
    <message>
        <source>New chat</source>
        <translation>Nouvelle conversation</translation>
    </message>
    <message>
        <source>Export conversation</source>
        <translation>Exporter la conversation</translation>
    </message>
    <message>
        <source>Markdown (*.md);;JSON (*.json)</source>
        <translation>Markdown (*.md);;JSON (*.json)</translation>
    </message>
    <message>
        <source>Exported “{0}” to {1}</source>
        <translation>« {0} » exporté dans {1}</translation>
    </message>
    <message>
        <source>Rename</source>
        <translation>Renommer</translation>
    </message>
    <message>
        <source>Export…</source>
        <translation>Exporter…</translation>
    </message>
    <message>
        <source>Delete conversation</source>
        <translation>Supprimer la conversation</translation>
    </message>
    <message>
        <source>This conversation is still being read from disk</source>
        <translation>Cette conversation est encore en cours de lecture sur le disque</translation>
    </message>
</context>
<context>
    <name>Engine</name>
    <message>
        <source>(bundled)</source>
        <translation>(fourni)</translation>
    </message>
    <message>
        <source>prompt lookup</source>
        <translation>recherche dans le prompt</translation>
    </message>
    <message>
        <source>the server's drafter</source>
        <translation>le brouillon du serveur</translation>
    </message>
    <message>
        <source>none</source>
        <translation>aucun</translation>
    </message>
    <message>
        <source>earlier conversations</source>
        <translation>conversations antérieures</translation>
    </message>
    <message>
        <source>draft model: {0} + lookup</source>
        <translation>modèle brouillon : {0} + recherche</translation>
    </message>
    <message>
        <source>draft model: {0}</source>
        <translation>modèle brouillon : {0}</translation>
    </message>
    <message>
        <source>Converting GGUF (first load only)…</source>
        <translation>Conversion du GGUF (au premier chargement seulement)…</translation>
    </message>
    <message>
        <source>Converting GGUF to its quantized form (first load only)…</source>
        <translation>Conversion du GGUF dans sa forme quantifiée (au premier chargement seulement)…</translation>
    </message>
    <message>
        <source>The cached form of {0} is damaged ({1}); converting it again…</source>
        <translation>La forme en cache de {0} est endommagée ({1}) ; nouvelle conversion…</translation>
    </message>
    <message>
        <source>Loading tokenizer…</source>
        <translation>Chargement du tokenizer…</translation>
    </message>
    <message>
        <source>Loading weights…</source>
        <translation>Chargement des poids…</translation>
    </message>
    <message>
        <source>Ready</source>
        <translation>Prêt</translation>
    </message>
    <message>
        <source>Preparing the model on {0}…</source>
        <translation>Préparation du modèle sur {0}…</translation>
    </message>
    <message>
        <source>Opening {0}…</source>
        <translation>Ouverture de {0}…</translation>
    </message>
    <message>
        <source>an OpenAI-compatible server</source>
        <translation>un serveur compatible OpenAI</translation>
    </message>
    <message>
        <source>{0} at {1}</source>
        <translation>{0} à {1}</translation>
    </message>
</context>
<context>
    <name>EngineError</name>
    <message>
        <source>The prompt is {tokens} tokens long, but {model} has room for {limit} tokens: shorten it or start a new chat.</source>
        <translation>Le prompt fait {tokens} jetons, mais {model} n’a de place que pour {limit} jetons : raccourcissez-le ou commencez une nouvelle conversation.</translation>
    </message>
    <message>
        <source>The prompt is empty: write something to send.</source>
        <translation>Le prompt est vide : écrivez quelque chose à envoyer.</translation>
    </message>
    <message>
        <source>There is no model file or folder at '{source}'.</source>
        <translation>Il n’y a aucun fichier ni dossier de modèle à l’emplacement « {source} ».</translation>
    </message>
    <message>
        <source>'{source}' is not a model folder: it has no config.json.</source>
        <translation>« {source} » n’est pas un dossier de modèle : il ne contient pas de config.json.</translation>
    </message>
    <message>
        <source>'{source}' is neither a file or folder on this computer nor a model in the local Hugging Face cache (SpecChat loads offline, so download it first).</source>
        <translation>« {source} » n’est ni un fichier ou dossier de cet ordinateur ni un modèle du cache Hugging Face local (SpecChat charge hors ligne : téléchargez-le d’abord).</translation>
    </message>
    <message>
        <source>The drafter {drafter} is not loaded (available: {available}).</source>
        <translation>Le brouillon {drafter} n’est pas chargé (disponibles : {available}).</translation>
    </message>
</context>
<context>
    <name>EngineWorker</name>
    <message>
        <source>Warming up…</source>
        <translation>Mise en route…</translation>
    </message>
    <message>
        <source>Connecting to {0}…</source>
        <translation>Connexion à {0}…</translation>
    </message>
    <message>
        <source>the model is not loaded</source>
        <translation>le modèle n’est pas chargé</translation>
    </message>
    <message>
        <source>No model is loaded: {0}</source>
        <translation>Aucun modèle n’est chargé : {0}</translation>
    </message>
    <message>
        <source>Compare on a server needs a second endpoint that does not speculate: set its URL or model in Settings → Server.</source>
        <translation>Comparer sur un serveur demande un second point d’accès qui ne spécule pas : indiquez son URL ou son modèle dans Réglages → Serveur.</translation>
    </message>
    <message>
        <source>The drafter experiment runs the models on this computer: a server chooses its own drafter. Choose “this computer” in Settings → Server to try drafters.</source>
        <translation>L’essai des brouillons fait tourner les modèles sur cet ordinateur : un serveur choisit lui-même son brouillon. Choisissez « cet ordinateur » dans Réglages → Serveur pour essayer des brouillons.</translation>
    </message>
    <message>
        <source>Out of memory. Try a smaller model, fewer new tokens, another dtype or the CPU.</source>
        <translation>Mémoire insuffisante. Essayez un modèle plus petit, moins de nouveaux jetons, un autre type de données ou le CPU.</translation>
    </message>
    <message>
        <source>Unexpected error in the engine ({0}: {1}). The app keeps running.</source>
        <translation>Erreur inattendue dans le moteur ({0} : {1}). L’application continue de fonctionner.</translation>
    </message>
</context>
<context>
    <name>ExplainDialog</name>
    <message>
        <source>Why was it faster or slower?</source>
        <translation>Pourquoi plus rapide ou plus lent ?</translation>
    </message>
    <message>
        <source>Run comparison</source>
        <translation>Lancer la comparaison</translation>
    </message>
    <message>
        <source>Run this answer again without speculation, to measure the real speed-up</source>
        <translation>Relancer cette réponse sans spéculation pour mesurer l’accélération réelle</translation>
    </message>
    <message>
        <source>Acceptance α (per position the target judged)</source>
        <translation>Acceptation α (par position jugée par le modèle cible)</translation>
    </message>
    <message>
        <source>Drafts accepted, of all proposed</source>
        <translation>Brouillons acceptés, sur tous ceux proposés</translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation>Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>Accepted drafts from an earlier conversation</source>
        <translation>Brouillons acceptés venus d’une conversation antérieure</translation>
    </message>
    <message>
        <source>Passes where auto k chose not to draft</source>
        <translation>Passes où le k automatique a choisi de ne rien proposer</translation>
    </message>
    <message>
        <source>Cost of drafting one token, c (× a plain pass)</source>
        <translation>Coût de génération d’un jeton brouillon, c (× une passe simple)</translation>
    </message>
    <message>
        <source>Cost of a draft model's pass (× a plain pass; lookup's drafts cost none)</source>
        <translation>Coût d’une passe du modèle brouillon (× une passe simple ; les brouillons de la recherche ne coûtent rien)</translation>
    </message>
    <message>
        <source>Cost of a pass over {0} tokens, v({1}) (× a plain pass)</source>
        <translation>Coût d’une passe sur {0} jetons, v({1}) (× une passe simple)</translation>
    </message>
    <message>
        <source>Predicted decode speed-up</source>
        <translation>Accélération du décodage prédite</translation>
    </message>
    <message>
        <source>Decode speed-up auto k predicted when it chose (its α, its measured costs)</source>
        <translation>Accélération du décodage prévue par k auto lors de son choix (son α, ses coûts mesurés)</translation>
    </message>
    <message>
        <source>Whole-run speed-up, measured (prefill included)</source>
        <translation>Accélération de l’exécution entière, mesurée (préremplissage inclus)</translation>
    </message>
    <message>
        <source>Most a decode speed-up of these passes can be (tokens per pass)</source>
        <translation>Accélération du décodage maximale possible pour ces passes (jetons par passe)</translation>
    </message>
    <message>
        <source>Cost of a plain pass</source>
        <translation>Coût d’une passe simple</translation>
    </message>
    <message>
        <source>Made on the server</source>
        <translation>Produite sur le serveur</translation>
    </message>
    <message>
        <source>Not reported by the server</source>
        <translation>Non communiqué par le serveur</translation>
    </message>
    <message>
        <source>what each pass cost (drafting and verifying): so no c, v, predicted speed-up or what-if curves are shown. Acceptance and tokens per pass are the server's counts.</source>
        <translation>ce qu’a coûté chaque passe (proposer et vérifier) : aucun c, v, gain prévu ni courbe « et si » n’est donc affiché. L’acceptation et les jetons par passe sont les décomptes du serveur.</translation>
    </message>
    <message>
        <source>not reported</source>
        <translation>non communiqué</translation>
    </message>
    <message>
        <source>{0} of {1} ({2})</source>
        <translation>{0} sur {1} ({2})</translation>
    </message>
    <message>
        <source>Drafts accepted, of proposed (the server's count)</source>
        <translation>Brouillons acceptés, sur proposés (décompte du serveur)</translation>
    </message>
    <message>
        <source>Decode tokens/s on the server's own clock</source>
        <translation>Jetons/s de décodage selon l’horloge du serveur</translation>
    </message>
    <message>
        <source>Decode speed-up, measured by Compare (its fresh reruns of this answer: with ÷ without speculation; prefill left out)</source>
        <translation>Accélération du décodage, mesurée par Comparer (ses nouvelles exécutions de cette réponse : avec ÷ sans spéculation ; préremplissage exclu)</translation>
    </message>
    <message>
        <source>Decode speed-up, measured (this run ÷ the run without speculation; prefill left out)</source>
        <translation>Accélération du décodage, mesurée (cette exécution ÷ celle sans spéculation ; préremplissage exclu)</translation>
    </message>
    <message>
        <source>{0}: not a result, the machine's load changed between the runs</source>
        <translation>{0} : pas un résultat, la charge de la machine a changé entre les exécutions</translation>
    </message>
    <message>
        <source>{0}: not a result, above the {1} these passes allow</source>
        <translation>{0} : pas un résultat, au-delà des {1} que ces passes permettent</translation>
    </message>
    <message>
        <source>not reported: a server does not say what its passes cost</source>
        <translation>non communiqué : un serveur ne dit pas ce que coûtent ses passes</translation>
    </message>
    <message>
        <source>{0} ms: the mean of the plain run's passes</source>
        <translation>{0} ms : la moyenne des passes de l’exécution simple</translation>
    </message>
    <message>
        <source>{0} ms: the mean of this run's own passes that checked no draft (timed under the same load as its other passes)</source>
        <translation>{0} ms : la moyenne des passes de cette exécution qui n’ont vérifié aucun brouillon (mesurées sous la même charge que ses autres passes)</translation>
    </message>
    <message>
        <source>{0} ms, from this answer's own passes that checked no draft (no comparison yet)</source>
        <translation>{0} ms, d’après les passes de cette réponse qui n’ont vérifié aucun brouillon (pas encore de comparaison)</translation>
    </message>
    <message>
        <source>unknown: this answer has no plain pass; run a comparison to measure it</source>
        <translation>inconnu : cette réponse n’a aucune passe simple ; lancez une comparaison pour le mesurer</translation>
    </message>
    <message>
        <source>Acceptance</source>
        <translation>Acceptation</translation>
    </message>
    <message>
        <source>Timeline</source>
        <translation>Chronologie</translation>
    </message>
    <message>
        <source>What if</source>
        <translation>Et si</translation>
    </message>
    <message>
        <source>What if: needs pass costs, which the server does not report</source>
        <translation>Et si : il faut le coût des passes, que le serveur ne communique pas</translation>
    </message>
    <message>
        <source>Timeline: SpecChat's clock between the server's stream events (not its passes)</source>
        <translation>Chronologie : l’horloge de SpecChat entre les événements du flux du serveur (pas ses passes)</translation>
    </message>
    <message>
        <source>What if: this run checked no drafts</source>
        <translation>Et si : cette exécution n’a vérifié aucun brouillon</translation>
    </message>
    <message>
        <source>What if: needs the cost of a plain pass (run a comparison)</source>
        <translation>Et si : nécessite le coût d’une passe simple (lancez une comparaison)</translation>
    </message>
</context>
<context>
    <name>Explanation</name>
    <message>
        <source>No draft was checked in this run, so every target pass produced one token and speculation could not help.</source>
        <translation>Aucun brouillon n’a été vérifié lors de cette exécution : chaque passe du modèle cible a donc produit un seul jeton et la spéculation n’a pas pu aider.</translation>
    </message>
    <message>
        <source>This answer was saved without its passes (by an older version): run a comparison to explain it.</source>
        <translation>Cette réponse a été enregistrée sans ses passes (par une version antérieure) : lancez une comparaison pour l’expliquer.</translation>
    </message>
    <message>
        <source>The target agreed with the draft at {alpha} of the positions it checked (acceptance α; {tokens} tokens per target pass)</source>
        <translation>Le modèle cible a été d’accord avec le brouillon à {alpha} des positions qu’il a vérifiées (acceptation α ; {tokens} jetons par passe du modèle cible)</translation>
    </message>
    <message>
        <source>a pass checking {k} drafts cost {verify} a plain step, and drafting them {draft}</source>
        <translation>une passe vérifiant {k} brouillons a coûté {verify} une étape simple, et leur génération {draft}</translation>
    </message>
    <message>
        <source>a pass checking one draft cost {verify} a plain step, and drafting it {draft}</source>
        <translation>une passe vérifiant un brouillon a coûté {verify} une étape simple, et sa génération {draft}</translation>
    </message>
    <message>
        <source>run a comparison to measure what a plain step costs</source>
        <translation>lancez une comparaison pour mesurer le coût d’une étape simple</translation>
    </message>
    <message>
        <source>the server does not report what its passes cost, so no cost or predicted speed-up is shown</source>
        <translation>le serveur ne dit pas ce que coûtent ses passes, donc aucun coût ni gain prévu n'est affiché</translation>
    </message>
    <message>
        <source>The server accepted {accepted} of the {proposed} drafts it proposed ({share}; {tokens} tokens per target pass); its stream did not say at which positions, so no acceptance α is shown</source>
        <translation>Le serveur a accepté {accepted} des {proposed} brouillons qu’il a proposés ({share} ; {tokens} jetons par passe de la cible) ; son flux n’a pas dit à quelles positions, donc aucune acceptation α n’est affichée</translation>
    </message>
    <message>
        <source>so the measured decode speed-up was {ratio}</source>
        <translation>l’accélération mesurée du décodage a donc été de {ratio}</translation>
    </message>
    <message>
        <source>so the measured decode speed-up was only {ratio}</source>
        <translation>l’accélération mesurée du décodage n’a donc été que de {ratio}</translation>
    </message>
    <message>
        <source>so the predicted decode speed-up is {ratio}</source>
        <translation>l’accélération prédite du décodage est donc de {ratio}</translation>
    </message>
    <message>
        <source>so the predicted decode speed-up is only {ratio}</source>
        <translation>l’accélération prédite du décodage n’est donc que de {ratio}</translation>
    </message>
    <message>
        <source>so the decode speed-up Compare measured on fresh reruns was {ratio}</source>
        <translation>donc l'accélération du décodage mesurée par Comparer sur de nouvelles exécutions était de {ratio}</translation>
    </message>
    <message>
        <source>so the decode speed-up Compare measured on fresh reruns was only {ratio}</source>
        <translation>donc l'accélération du décodage mesurée par Comparer sur de nouvelles exécutions n'était que de {ratio}</translation>
    </message>
    <message>
        <source>held back most by the drafts the target rejected</source>
        <translation>freinée surtout par les brouillons que la cible a rejetés</translation>
    </message>
    <message>
        <source>The measured decode speed-up ({ratio}) is not a result: the machine's load changed between the runs with and without speculation.</source>
        <translation>L'accélération du décodage mesurée ({ratio}) n'est pas un résultat : la charge de la machine a changé entre les exécutions avec et sans spéculation.</translation>
    </message>
    <message>
        <source>The measured decode speed-up ({ratio}) is not a result: it is above the {ceiling} these passes allow (tokens per pass, each pass costing at least a plain one), so the runs did not run under like conditions.</source>
        <translation>L'accélération du décodage mesurée ({ratio}) n'est pas un résultat : elle dépasse les {ceiling} que ces passes permettent (jetons par passe, chaque passe coûtant au moins une passe simple) ; les exécutions n'ont donc pas eu lieu dans les mêmes conditions.</translation>
    </message>
    <message>
        <source>Auto k chose not to draft in {count} of {total} passes: no number of drafts was predicted to gain 3 % (the best: {gain} with {k} drafts, at an assumed acceptance of {alpha} and a pass over them measured at {v} a plain step).</source>
        <translation>k auto a choisi de ne pas proposer de brouillon dans {count} passes sur {total} : aucun nombre de brouillons ne devait faire gagner 3 % (le meilleur : {gain} avec {k} brouillons, pour une acceptation supposée de {alpha} et une passe sur eux mesurée à {v} une étape simple).</translation>
    </message>
    <message>
        <source>Drafting measured slower than plain steps in this answer: its first {drafted} passes with drafts ran at {realized} their speed (acceptance {alpha}), so {count} of its {total} passes were plain steps.</source>
        <translation>Dans cette réponse, les brouillons se sont révélés plus lents que les étapes simples : ses {drafted} premières passes avec brouillons ont tourné à {realized} de leur vitesse (acceptation {alpha}), donc {count} de ses {total} passes ont été des étapes simples.</translation>
    </message>
    <message>
        <source>Drafting cost {c} of a plain target pass a draft verified, on the answer's clock (a draft model's pass: {pass_cost}; {ahead} of the drafting passes drafted while the target verified the block before); at that cost {k} drafts a pass break even at an acceptance of {alpha}.</source>
        <translation>Les brouillons ont coûté {c} d'une passe simple de la cible par brouillon vérifié, sur l'horloge de la réponse (une passe du modèle brouillon : {pass_cost} ; {ahead} des passes de brouillon faites pendant que la cible vérifiait le bloc précédent) ; à ce coût, {k} brouillons par passe sont à l'équilibre pour une acceptation de {alpha}.</translation>
    </message>
    <message>
        <source>Drafting cost {c} of a plain target pass a draft verified, on the answer's clock (a draft model's pass: {pass_cost}; {ahead} of the drafting passes drafted while the target verified the block before); at that cost {k} drafts a pass cannot break even, whatever the acceptance.</source>
        <translation>Les brouillons ont coûté {c} d'une passe simple de la cible par brouillon vérifié, sur l'horloge de la réponse (une passe du modèle brouillon : {pass_cost} ; {ahead} des passes de brouillon faites pendant que la cible vérifiait le bloc précédent) ; à ce coût, {k} brouillons par passe ne peuvent pas être à l'équilibre, quelle que soit l'acceptation.</translation>
    </message>
    <message>
        <source>No drafts used: plain steps only, because auto k predicted no gain from drafting (the best: {gain} with {k} drafts, at an assumed acceptance of {alpha}, a draft step costing {c} of a plain pass).</source>
        <translation>Aucun brouillon utilisé : des étapes simples seulement, car le k automatique ne prévoyait aucun gain (au mieux {gain} avec {k} brouillons, pour une acceptation supposée de {alpha}, une étape de brouillon coûtant {c} d'une passe simple).</translation>
    </message>
    <message>
        <source>No drafts used: plain steps only, because the draft model would first have had to read the whole prompt, which this answer could not repay.</source>
        <translation>Aucun brouillon utilisé : des étapes simples seulement, car le modèle brouillon aurait d'abord dû lire toute l'invite, ce que cette réponse n'aurait pas remboursé.</translation>
    </message>
    <message>
        <source>No drafts used: plain steps only, because the drafter found nothing in the conversation to propose.</source>
        <translation>Aucun brouillon utilisé : des étapes simples seulement, car le brouillon n'a rien trouvé à proposer dans la conversation.</translation>
    </message>
    <message>
        <source>The draft model sat this answer out: it would first have had to read the whole prompt, which this answer could not repay. Lookup drafted alone.</source>
        <translation>Le modèle brouillon n'a pas servi pour cette réponse : il aurait d'abord dû lire toute l'invite, ce que cette réponse n'aurait pas remboursé. La recherche a proposé seule les brouillons.</translation>
    </message>
    <message>
        <source>The draft model sat this answer out: by this machine's recent steps a draft step would cost {c} of a plain target pass and a pass checking {n} tokens {v} plain passes, so no acceptance would repay it. Lookup drafted alone.</source>
        <translation>Le modèle brouillon n'a pas servi pour cette réponse : d'après les dernières étapes sur cette machine, une étape de brouillon coûterait {c} d'une passe simple du modèle cible et une passe qui vérifie {n} jetons {v} passes simples, si bien qu'aucun taux d'acceptation ne le rembourserait. La recherche a proposé seule les brouillons.</translation>
    </message>
    <message>
        <source>The draft model sat this answer out: by this machine's recent steps a draft step would cost {c} of a plain target pass and a pass checking {n} tokens {v} plain passes, so it would need {needed} of its drafts accepted to break even, and {alpha} are expected. Lookup drafted alone.</source>
        <translation>Le modèle brouillon n'a pas servi pour cette réponse : d'après les dernières étapes sur cette machine, une étape de brouillon coûterait {c} d'une passe simple du modèle cible et une passe qui vérifie {n} jetons {v} passes simples, si bien qu'il lui faudrait {needed} de brouillons acceptés pour rentrer dans ses frais, et {alpha} sont attendus. La recherche a proposé seule les brouillons.</translation>
    </message>
    <message>
        <source>held back most by the cost of drafting</source>
        <translation>freinée surtout par le coût de génération du brouillon</translation>
    </message>
    <message>
        <source>held back most by the cost of verifying several tokens at once</source>
        <translation>freinée surtout par le coût de la vérification de plusieurs jetons à la fois</translation>
    </message>
    <message>
        <source>Auto k chose not to draft in {count} of {total} passes: the draft model would first have had to read the whole prompt, which the rest of this answer could not repay.</source>
        <translation>Le k automatique a choisi de ne rien proposer dans {count} passes sur {total} : le modèle brouillon aurait d'abord dû lire tout le prompt, ce que la suite de cette réponse ne pouvait pas rembourser.</translation>
    </message>
    <message>
        <source>{count} of the {total} accepted drafts came from an earlier conversation.</source>
        <translation>{count} des {total} brouillons acceptés venaient d’une conversation antérieure.</translation>
    </message>
</context>
<context>
    <name>Export</name>
    <message>
        <source>New chat</source>
        <translation>Nouvelle conversation</translation>
    </message>
    <message>
        <source>SpecChat conversation</source>
        <translation>Conversation SpecChat</translation>
    </message>
    <message>
        <source>System prompt</source>
        <translation>Consigne système</translation>
    </message>
    <message>
        <source>You</source>
        <translation>Vous</translation>
    </message>
    <message>
        <source>Assistant</source>
        <translation>Assistant</translation>
    </message>
    <message>
        <source>Export to a .md or .json file (got '{0}').</source>
        <translation>Exportez vers un fichier .md ou .json (reçu : « {0} »).</translation>
    </message>
    <message>
        <source>Could not export to '{0}': {1}</source>
        <translation>Impossible d’exporter vers « {0} » : {1}</translation>
    </message>
</context>
<context>
    <name>MainWindow</name>
    <message>
        <source>SpecChat</source>
        <translation>SpecChat</translation>
    </message>
    <message>
        <source>Main</source>
        <translation>Principale</translation>
    </message>
    <message>
        <source>New chat</source>
        <translation>Nouvelle conversation</translation>
    </message>
    <message>
        <source>Settings…</source>
        <translation>Réglages…</translation>
    </message>
    <message>
        <source>Models…</source>
        <translation>Modèles…</translation>
    </message>
    <message>
        <source>The models on this computer, and which can draft for which</source>
        <translation>Les modèles de cet ordinateur, et lesquels peuvent servir de brouillon pour lesquels</translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation>Spéculation</translation>
    </message>
    <message>
        <source>Draft tokens and verify them in one target pass</source>
        <translation>Proposer des jetons en brouillon et les vérifier en une seule passe du modèle cible</translation>
    </message>
    <message>
        <source>Show rejected drafts</source>
        <translation>Afficher les brouillons rejetés</translation>
    </message>
    <message>
        <source>Also show, struck through, the guessed tokens the target model did not keep</source>
        <translation>Afficher aussi, barrés, les jetons devinés que le modèle cible n’a pas conservés</translation>
    </message>
    <message>
        <source>System prompt (optional)</source>
        <translation>Consigne système (facultative)</translation>
    </message>
    <message>
        <source>Instructions the model reads before the conversation, such as: Answer briefly.</source>
        <translation>Instructions que le modèle lit avant la conversation, par exemple : Réponds brièvement.</translation>
    </message>
    <message>
        <source>Dismiss</source>
        <translation>Fermer</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>Envoyer</translation>
    </message>
    <message>
        <source>No model loaded</source>
        <translation>Aucun modèle chargé</translation>
    </message>
    <message>
        <source>The latest conversation is large ({0}): click it in the list to open it.</source>
        <translation>La dernière conversation est volumineuse ({0}) : cliquez dessus dans la liste pour l’ouvrir.</translation>
    </message>
    <message>
        <source>Stop</source>
        <translation>Arrêter</translation>
    </message>
    <message>
        <source>Stop generating (Esc)</source>
        <translation>Arrêter la génération (Échap)</translation>
    </message>
    <message>
        <source>Send (Enter)</source>
        <translation>Envoyer (Entrée)</translation>
    </message>
    <message>
        <source>The model library is not available in this window.</source>
        <translation>La bibliothèque de modèles n’est pas disponible dans cette fenêtre.</translation>
    </message>
    <message>
        <source>Could not use the server at {0}: {1}</source>
        <translation>Impossible d’utiliser le serveur à {0} : {1}</translation>
    </message>
    <message>
        <source>Using the bundled model meanwhile.</source>
        <translation>Le modèle fourni est utilisé en attendant.</translation>
    </message>
    <message>
        <source>Fix them in Settings.</source>
        <translation>Corrigez-les dans les Réglages.</translation>
    </message>
    <message>
        <source>SpecChat is busy: wait for the current answer, then try again.</source>
        <translation>SpecChat est occupé : attendez la fin de la réponse en cours, puis réessayez.</translation>
    </message>
    <message>
        <source>Opening “{0}”…</source>
        <translation>Ouverture de « {0} »…</translation>
    </message>
    <message>
        <source>Max new tokens {0} is more than the model holds: capped to its context of {1} tokens.</source>
        <translation>{0} nouveaux jetons au maximum, c’est plus que le modèle ne peut contenir : limité à son contexte de {1} jetons.</translation>
    </message>
    <message>
        <source>Connecting to {0}…</source>
        <translation>Connexion à {0}…</translation>
    </message>
    <message>
        <source>Loading {0}…</source>
        <translation>Chargement de {0}…</translation>
    </message>
    <message>
        <source>Loading the bundled model…</source>
        <translation>Chargement du modèle fourni…</translation>
    </message>
    <message>
        <source>{0} CPU threads asked for: using {1}, the CPUs of this computer (more only slow it down).</source>
        <translation>{0} fils de calcul demandés : {1} utilisés, les processeurs de cet ordinateur (davantage ne fait que ralentir).</translation>
    </message>
    <message>
        <source>Target: {0} · Drafter: {1}</source>
        <translation>Cible : {0} · Brouillon : {1}</translation>
    </message>
    <message>
        <source>Target: {0} · Speculation off</source>
        <translation>Cible : {0} · Spéculation désactivée</translation>
    </message>
    <message>
        <source>the server asked for could not be used (see Settings)</source>
        <translation>le serveur demandé n’a pas pu être utilisé (voir Réglages)</translation>
    </message>
    <message>
        <source>the requested models could not be loaded (see Settings)</source>
        <translation>les modèles demandés n’ont pas pu être chargés (voir Réglages)</translation>
    </message>
    <message>
        <source>Model {0} on {1}</source>
        <translation>Modèle {0} sur {1}</translation>
    </message>
    <message>
        <source>{0} · weight-only kernels</source>
        <translation>{0} · noyaux à poids quantifiés</translation>
    </message>
    <message>
        <source>{0} weights, {1} compute</source>
        <translation>poids {0}, calcul en {1}</translation>
    </message>
    <message>
        <source>{0} · oneDNN kernels</source>
        <translation>{0} · noyaux oneDNN</translation>
    </message>
    <message>
        <source>{0} · stock kernels</source>
        <translation>{0} · noyaux standard</translation>
    </message>
    <message>
        <source>(auto: the fastest exact form here)</source>
        <translation>(auto : la forme exacte la plus rapide ici)</translation>
    </message>
    <message>
        <source>draft {0} (measured cheapest: a step {1}× the next form's)</source>
        <translation>brouillon {0} (mesuré le moins cher : un pas {1}× celui de la forme suivante)</translation>
    </message>
    <message>
        <source>draft {0}</source>
        <translation>brouillon {0}</translation>
    </message>
    <message>
        <source>{0} (quantized by SpecChat)</source>
        <translation>{0} (quantifié par SpecChat)</translation>
    </message>
    <message>
        <source>{0} from {1}</source>
        <translation>{0} depuis {1}</translation>
    </message>
    <message>
        <source>{0} GB</source>
        <translation>{0} Go</translation>
    </message>
    <message>
        <source>{0} saved conversation(s) could not be read and were skipped; the files are kept:</source>
        <translation>{0} conversation(s) enregistrée(s) n’ont pas pu être lue(s) et ont été ignorée(s) ; les fichiers sont conservés :</translation>
    </message>
    <message>
        <source>… and {0} more</source>
        <translation>… et {0} de plus</translation>
    </message>
    <message>
        <source>Could not load the models: {0}</source>
        <translation>Impossible de charger les modèles : {0}</translation>
    </message>
    <message>
        <source>Still using the models loaded before.</source>
        <translation>Les modèles chargés auparavant restent utilisés.</translation>
    </message>
</context>
<context>
    <name>MarkdownView</name>
    <message>
        <source>Copy code block</source>
        <translation>Copier le bloc de code</translation>
    </message>
    <message>
        <source>Copy code</source>
        <translation>Copier le code</translation>
    </message>
</context>
<context>
    <name>ModelSourcePicker</name>
    <message>
        <source>Bundled default (SmolLM2-135M-Instruct)</source>
        <translation>Modèle fourni par défaut (SmolLM2-135M-Instruct)</translation>
    </message>
    <message>
        <source>Model folder…</source>
        <translation>Dossier de modèle…</translation>
    </message>
    <message>
        <source>GGUF file…</source>
        <translation>Fichier GGUF…</translation>
    </message>
    <message>
        <source>Model in the local Hugging Face cache</source>
        <translation>Modèle du cache Hugging Face local</translation>
    </message>
    <message>
        <source>Prompt lookup (no model)</source>
        <translation>Recherche dans le prompt (sans modèle)</translation>
    </message>
    <message>
        <source>Earlier conversations + prompt lookup (no model)</source>
        <translation>Conversations antérieures + recherche dans le prompt (sans modèle)</translation>
    </message>
    <message>
        <source>None</source>
        <translation>Aucun</translation>
    </message>
    <message>
        <source>No second model: guesses the next words by copying what followed the same words earlier in the conversation. Costs nothing; best when the answer repeats text or code.</source>
        <translation>Sans second modèle : devine les mots suivants en copiant ce qui suivait les mêmes mots plus tôt dans la conversation. Ne coûte rien ; idéal quand la réponse reprend du texte ou du code.</translation>
    </message>
    <message>
        <source>No second model: copies what followed the same words in this conversation or in an earlier one (every saved chat, the answers being regenerated or compared). Costs nothing; best when questions, answers or code come back.</source>
        <translation>Pas de second modèle : recopie ce qui suivait les mêmes mots dans cette conversation ou dans une conversation antérieure (toutes les discussions enregistrées, les réponses régénérées ou comparées). Ne coûte rien ; idéal quand des questions, des réponses ou du code reviennent.</translation>
    </message>
    <message>
        <source>No drafting: the target model writes one token at a time.</source>
        <translation>Sans brouillon : le modèle cible écrit un jeton à la fois.</translation>
    </message>
    <message>
        <source>The small model that comes with SpecChat.</source>
        <translation>Le petit modèle fourni avec SpecChat.</translation>
    </message>
    <message>
        <source>A folder holding a Hugging Face model (config.json and its weights).</source>
        <translation>Un dossier contenant un modèle Hugging Face (config.json et ses poids).</translation>
    </message>
    <message>
        <source>A single .gguf model file, as used by llama.cpp.</source>
        <translation>Un fichier de modèle .gguf unique, comme ceux utilisés par llama.cpp.</translation>
    </message>
    <message>
        <source>A model already downloaded with Hugging Face tools; nothing is downloaded.</source>
        <translation>Un modèle déjà téléchargé avec les outils Hugging Face ; rien n’est téléchargé.</translation>
    </message>
    <message>
        <source>What guesses tokens ahead for the target model to check. Prompt lookup copies from the conversation; a small model of the same family guesses like the target. The answer is the same either way: only the speed changes.</source>
        <translation>Ce qui devine des jetons à l’avance pour que le modèle cible les vérifie. La recherche dans le prompt copie la conversation ; un petit modèle de la même famille devine comme le modèle cible. La réponse est la même dans tous les cas : seule la vitesse change.</translation>
    </message>
    <message>
        <source>The model that writes the answers.</source>
        <translation>Le modèle qui écrit les réponses.</translation>
    </message>
    <message>
        <source>The model folder, the .gguf file, or the ORG/NAME id in the cache.</source>
        <translation>Le dossier du modèle, le fichier .gguf ou l’identifiant ORG/NOM dans le cache.</translation>
    </message>
    <message>
        <source>Browse…</source>
        <translation>Parcourir…</translation>
    </message>
    <message>
        <source>Pick the folder or file on this computer.</source>
        <translation>Choisir le dossier ou le fichier sur cet ordinateur.</translation>
    </message>
    <message>
        <source>ORG/NAME (no model found in the cache)</source>
        <translation>ORG/NOM (aucun modèle trouvé dans le cache)</translation>
    </message>
    <message>
        <source>Choose a GGUF file</source>
        <translation>Choisir un fichier GGUF</translation>
    </message>
    <message>
        <source>GGUF files (*.gguf)</source>
        <translation>Fichiers GGUF (*.gguf)</translation>
    </message>
    <message>
        <source>Choose a model folder</source>
        <translation>Choisir un dossier de modèle</translation>
    </message>
</context>
<context>
    <name>ModelsDialog</name>
    <message>
        <source>Models</source>
        <translation>Modèles</translation>
    </message>
    <message>
        <source>Name</source>
        <translation>Nom</translation>
    </message>
    <message>
        <source>Architecture</source>
        <translation>Architecture</translation>
    </message>
    <message>
        <source>Parameters</source>
        <translation>Paramètres</translation>
    </message>
    <message>
        <source>Size</source>
        <translation>Taille</translation>
    </message>
    <message>
        <source>Data type</source>
        <translation>Type de données</translation>
    </message>
    <message>
        <source>Context</source>
        <translation>Contexte</translation>
    </message>
    <message>
        <source>Tokenizer</source>
        <translation>Tokeniseur</translation>
    </message>
    <message>
        <source>As a draft</source>
        <translation>Comme brouillon</translation>
    </message>
    <message>
        <source>Number of weights, counted from the file headers</source>
        <translation>Nombre de poids, compté d’après les en-têtes du fichier</translation>
    </message>
    <message>
        <source>How the weights are stored: a float type or a quantisation</source>
        <translation>Format de stockage des poids : type flottant ou quantification</translation>
    </message>
    <message>
        <source>The longest conversation the model was built for, in tokens</source>
        <translation>La plus longue conversation prévue pour le modèle, en jetons</translation>
    </message>
    <message>
        <source>How text is cut into tokens, and how many tokens it knows</source>
        <translation>Comment le texte est découpé en jetons, et combien de jetons il connaît</translation>
    </message>
    <message>
        <source>Whether the model can draft for the chosen target (same text → same token ids)</source>
        <translation>Si le modèle peut servir de brouillon pour le modèle cible choisi (même texte → mêmes identifiants de jetons)</translation>
    </message>
    <message>
        <source>Rescan</source>
        <translation>Réanalyser</translation>
    </message>
    <message>
        <source>Add folder…</source>
        <translation>Ajouter un dossier…</translation>
    </message>
    <message>
        <source>Add GGUF file…</source>
        <translation>Ajouter un fichier GGUF…</translation>
    </message>
    <message>
        <source>Choose a target model in the list.</source>
        <translation>Choisissez un modèle cible dans la liste.</translation>
    </message>
    <message>
        <source>The model that guesses ahead for the target; it must split text into the same tokens</source>
        <translation>Le modèle qui devine à l’avance pour le modèle cible ; il doit découper le texte en jetons identiques</translation>
    </message>
    <message>
        <source>Technical detail</source>
        <translation>Détail technique</translation>
    </message>
    <message>
        <source>Show why this draft can or cannot be used, in detail</source>
        <translation>Afficher en détail pourquoi ce brouillon peut ou ne peut pas être utilisé</translation>
    </message>
    <message>
        <source>Target and draft pairs you used lately: pick one to choose both again</source>
        <translation>Paires cible-brouillon utilisées récemment : choisissez-en une pour resélectionner les deux</translation>
    </message>
    <message>
        <source>Target:</source>
        <translation>Cible :</translation>
    </message>
    <message>
        <source>Measure drafts</source>
        <translation>Mesurer les brouillons</translation>
    </message>
    <message>
        <source>Answer a short question ({0} tokens) with the target alone, then with prompt lookup and each compatible draft, on this computer, and rank them by the speed-up they predict. Loads each model once, in the background; takes seconds to minutes.</source>
        <translation>Répondre à une courte question ({0} jetons) avec le modèle cible seul, puis avec la recherche dans le prompt et chaque brouillon compatible, sur cet ordinateur, et les classer selon l’accélération prévue. Charge chaque modèle une fois, en arrière-plan ; prend de quelques secondes à quelques minutes.</translation>
    </message>
    <message>
        <source>Draft:</source>
        <translation>Brouillon :</translation>
    </message>
    <message>
        <source>Recent pairs:</source>
        <translation>Paires récentes :</translation>
    </message>
    <message>
        <source>Use this pair</source>
        <translation>Utiliser cette paire</translation>
    </message>
    <message>
        <source>Looking for models…</source>
        <translation>Recherche de modèles…</translation>
    </message>
    <message>
        <source>Measuring {0} drafter(s) on this computer: a short answer with each…</source>
        <translation>Mesure de {0} générateur(s) de brouillon sur cet ordinateur : une courte réponse avec chacun…</translation>
    </message>
    <message numerus="yes">
        <source>%n model(s) found</source>
        <translation>
            <numerusform>%n modèle trouvé</numerusform>
            <numerusform>%n modèles trouvés</numerusform>
        </translation>
    </message>
    <message numerus="yes">
        <source>%n cannot be used</source>
        <translation>
            <numerusform>%n inutilisable</numerusform>
            <numerusform>%n inutilisables</numerusform>
        </translation>
    </message>
    <message>
        <source>Cannot be used</source>
        <translation>Inutilisable</translation>
    </message>
    <message>
        <source>{0}, running as {1}</source>
        <translation>{0}, exécuté en {1}</translation>
    </message>
    <message>
        <source>Target</source>
        <translation>Cible</translation>
    </message>
    <message>
        <source>Checking</source>
        <translation>Vérification</translation>
    </message>
    <message>
        <source>Checking which models can draft for {0}…</source>
        <translation>Recherche des modèles pouvant servir de brouillon pour {0}…</translation>
    </message>
    <message>
        <source>{0}: compatible (the same text gives the same token ids)</source>
        <translation>{0} : compatible (le même texte donne les mêmes identifiants de jetons)</translation>
    </message>
    <message>
        <source>No other model on this computer to check against {0}. Prompt lookup and earlier conversations need no second model: they copy text the target's own tokenizer made.</source>
        <translation>Aucun autre modèle sur cet ordinateur à vérifier avec {0}. La recherche dans le prompt et les conversations antérieures n’ont pas besoin d’un second modèle : elles recopient du texte découpé par le tokenizer du modèle cible lui-même.</translation>
    </message>
    <message>
        <source>The measurement was stopped.</source>
        <translation>La mesure a été interrompue.</translation>
    </message>
    <message>
        <source>None was faster than the target alone: no drafter is suggested.</source>
        <translation>Aucun n’a été plus rapide que le modèle cible seul : aucun générateur de brouillon n’est suggéré.</translation>
    </message>
    <message>
        <source>{0}× (α {1})</source>
        <translation>{0}× (α {1})</translation>
    </message>
    <message>
        <source>Compatible</source>
        <translation>Compatible</translation>
    </message>
    <message>
        <source>Earlier conversations + prompt lookup (no draft model)</source>
        <translation>Conversations antérieures + recherche dans le prompt (sans modèle de brouillon)</translation>
    </message>
    <message>
        <source>No compatible model is at least {0}× smaller than the target.</source>
        <translation>Aucun modèle compatible n’est au moins {0}× plus petit que le modèle cible.</translation>
    </message>
    <message>
        <source>Drafts by copying from this conversation and from earlier ones (kept in memory on this computer only); it needs no second model.</source>
        <translation>Rédige ses brouillons en recopiant cette conversation et les précédentes (gardées en mémoire sur cet ordinateur seulement) ; aucun second modèle n’est nécessaire.</translation>
    </message>
    <message>
        <source>It has {0}× fewer parameters than the target.</source>
        <translation>Il a {0}× moins de paramètres que le modèle cible.</translation>
    </message>
    <message>
        <source>Measured here: {0}.</source>
        <translation>Mesuré ici : {0}.</translation>
    </message>
    <message>
        <source>Technical detail: {0}</source>
        <translation>Détail technique : {0}</translation>
    </message>
    <message>
        <source>Measured on this computer: the target answered a short question ({0} tokens) alone, then with each drafter guessing {1} tokens ahead; the figure is the decode speed-up that run predicts over the target alone.</source>
        <translation>Mesuré sur cet ordinateur : le modèle cible a répondu seul à une courte question ({0} jetons), puis avec chaque brouillon devinant {1} jetons d’avance ; le chiffre est l’accélération du décodage que cette exécution prédit par rapport au modèle cible seul.</translation>
    </message>
    <message>
        <source>No draft model on this computer fits this target, so there was nothing else to rank: add the folder or GGUF file of a smaller model with the same tokenizer to compare one.</source>
        <translation>Aucun modèle brouillon de cet ordinateur ne convient à ce modèle cible, il n’y avait donc rien d’autre à classer : ajoutez le dossier ou le fichier GGUF d’un modèle plus petit au même tokenizer pour en comparer un.</translation>
    </message>
    <message>
        <source>Earlier conversations is not measured here: what it gains depends on what your chats repeat.</source>
        <translation>Conversations antérieures n’est pas mesuré ici : son gain dépend de ce que vos conversations répètent.</translation>
    </message>
    <message>
        <source>{0}: could not be measured ({1}).</source>
        <translation>{0} : n’a pas pu être mesuré ({1}).</translation>
    </message>
    <message>
        <source>not known</source>
        <translation>inconnu</translation>
    </message>
    <message>
        <source>faster than the target alone on this question</source>
        <translation>plus rapide que le modèle cible seul sur cette question</translation>
    </message>
    <message>
        <source>slower than the target alone on this question</source>
        <translation>plus lent que le modèle cible seul sur cette question</translation>
    </message>
    <message>
        <source>about as fast as the target alone on this question</source>
        <translation>à peu près aussi rapide que le modèle cible seul sur cette question</translation>
    </message>
    <message>
        <source>{0}: {1}, {2}.</source>
        <translation>{0} : {1}, {2}.</translation>
    </message>
    <message>
        <source>Suggested draft</source>
        <translation>Brouillon suggéré</translation>
    </message>
    <message>
        <source>shorter context</source>
        <translation>contexte plus court</translation>
    </message>
    <message>
        <source>not measured</source>
        <translation>non mesuré</translation>
    </message>
    <message>
        <source>Measured here: a predicted speed-up of {0}× at acceptance α {1} over {2} tokens.</source>
        <translation>Mesuré ici : une accélération prévue de {0}× pour une acceptation α de {1} sur {2} jetons.</translation>
    </message>
    <message>
        <source>(suggested)</source>
        <translation>(suggéré)</translation>
    </message>
    <message>
        <source>Prompt lookup (no draft model)</source>
        <translation>Recherche dans le prompt (sans modèle brouillon)</translation>
    </message>
    <message>
        <source>No drafter</source>
        <translation>Aucun brouillon</translation>
    </message>
    <message>
        <source>Its context is {0} tokens, shorter than the target's {1}: in longer conversations its guesses get poor, so speculation gains less (answers stay the same).</source>
        <translation>Son contexte est de {0} jetons, plus court que celui du modèle cible ({1}) : dans les longues conversations, ses propositions deviennent médiocres et la spéculation rapporte moins (les réponses restent les mêmes).</translation>
    </message>
    <message>
        <source>{0} compatible, {1} not.</source>
        <translation>{0} compatible(s), {1} non.</translation>
    </message>
    <message>
        <source>Prompt lookup drafts by copying from the conversation; it needs no second model.</source>
        <translation>La recherche dans le prompt produit ses brouillons en copiant la conversation ; elle ne nécessite pas de second modèle.</translation>
    </message>
    <message>
        <source>Without a drafter the target writes every token itself.</source>
        <translation>Sans brouillon, le modèle cible écrit lui-même chaque jeton.</translation>
    </message>
    <message>
        <source>Choose a recent pair…</source>
        <translation>Choisir une paire récente…</translation>
    </message>
    <message>
        <source>(none yet)</source>
        <translation>(aucune pour l’instant)</translation>
    </message>
    <message>
        <source>That model is no longer on this computer.</source>
        <translation>Ce modèle n’est plus sur cet ordinateur.</translation>
    </message>
    <message>
        <source>prompt lookup</source>
        <translation>recherche dans le prompt</translation>
    </message>
    <message>
        <source>earlier conversations + prompt lookup</source>
        <translation>conversations antérieures + recherche dans le prompt</translation>
    </message>
    <message>
        <source>no drafter</source>
        <translation>aucun brouillon</translation>
    </message>
    <message>
        <source>Add a model folder</source>
        <translation>Ajouter un dossier de modèles</translation>
    </message>
    <message>
        <source>Add a GGUF file</source>
        <translation>Ajouter un fichier GGUF</translation>
    </message>
    <message>
        <source>GGUF models (*.gguf)</source>
        <translation>Modèles GGUF (*.gguf)</translation>
    </message>
</context>
<context>
    <name>ServerFiguresBox</name>
    <message>
        <source>What the servers reported (the speculative endpoint, then the plain one)</source>
        <translation>Ce que les serveurs ont communiqué (le point d’accès spéculatif, puis le simple)</translation>
    </message>
    <message>
        <source>Server</source>
        <translation>Serveur</translation>
    </message>
    <message>
        <source>Time to first token (SpecChat's clock)</source>
        <translation>Délai du premier jeton (horloge de SpecChat)</translation>
    </message>
    <message>
        <source>{0} s</source>
        <translation>{0} s</translation>
    </message>
    <message>
        <source>Decode tokens/s (SpecChat's clock)</source>
        <translation>Jetons/s de décodage (horloge de SpecChat)</translation>
    </message>
    <message>
        <source>Decode tokens/s (the server's clock, predicted_ms)</source>
        <translation>Jetons/s de décodage (horloge du serveur, predicted_ms)</translation>
    </message>
    <message>
        <source>Drafts accepted, of proposed (the server's count)</source>
        <translation>Brouillons acceptés, sur proposés (décompte du serveur)</translation>
    </message>
    <message>
        <source>Speculative passes (the server's count)</source>
        <translation>Passes spéculatives (décompte du serveur)</translation>
    </message>
    <message>
        <source>Requests timed (A B B A)</source>
        <translation>Requêtes chronométrées (A B B A)</translation>
    </message>
    <message>
        <source>Speculative endpoint</source>
        <translation>Point d’accès spéculatif</translation>
    </message>
    <message>
        <source>Plain endpoint</source>
        <translation>Point d’accès simple</translation>
    </message>
    <message>
        <source>not reported</source>
        <translation>non communiqué</translation>
    </message>
    <message>
        <source>none drafted</source>
        <translation>aucun brouillon</translation>
    </message>
    <message>
        <source>{0} of {1} ({2})</source>
        <translation>{0} sur {1} ({2})</translation>
    </message>
</context>
<context>
    <name>ServerSettings</name>
    <message>
        <source>The server's URL</source>
        <translation>L’URL du serveur</translation>
    </message>
    <message>
        <source>{0} is empty: type it, e.g. http://127.0.0.1:8080.</source>
        <translation>{0} est vide : saisissez-la, par exemple http://127.0.0.1:8080.</translation>
    </message>
    <message>
        <source>{0} holds a space.</source>
        <translation>{0} contient une espace.</translation>
    </message>
    <message>
        <source>{0} is not a valid URL (look at the port number).</source>
        <translation>{0} n’est pas une URL valide (vérifiez le numéro de port).</translation>
    </message>
    <message>
        <source>{0} must start with http:// or https:// (SpecChat talks to nothing else).</source>
        <translation>{0} doit commencer par http:// ou https:// (SpecChat ne parle à rien d’autre).</translation>
    </message>
    <message>
        <source>{0} names no host: e.g. http://127.0.0.1:8080.</source>
        <translation>{0} ne nomme aucun hôte : par exemple http://127.0.0.1:8080.</translation>
    </message>
    <message>
        <source>{0} holds a user name or password: leave it out and name an environment variable holding the API key instead (the settings file would keep it).</source>
        <translation>{0} contient un nom d’utilisateur ou un mot de passe : retirez-le et nommez plutôt une variable d’environnement qui contient la clé d’API (le fichier de réglages le garderait).</translation>
    </message>
    <message>
        <source>{0} must not carry a query (?…) or a fragment (#…): the server's address only.</source>
        <translation>{0} ne doit porter ni requête (?…) ni fragment (#…) : seulement l’adresse du serveur.</translation>
    </message>
    <message>
        <source>The API key setting takes the NAME of an environment variable (letters, digits and _, e.g. OPENAI_API_KEY), not the key itself: the key is never written to the settings.</source>
        <translation>Le réglage de la clé d’API prend le NOM d’une variable d’environnement (lettres, chiffres et _, par exemple OPENAI_API_KEY), pas la clé elle-même : la clé n’est jamais écrite dans les réglages.</translation>
    </message>
</context>
<context>
    <name>ServerSettingsPanel</name>
    <message>
        <source>This computer (the models in the Models tab)</source>
        <translation>Cet ordinateur (les modèles de l’onglet Modèles)</translation>
    </message>
    <message>
        <source>A server (OpenAI-compatible: llama.cpp's llama-server, vLLM)</source>
        <translation>Un serveur (compatible OpenAI : llama-server de llama.cpp, vLLM)</translation>
    </message>
    <message>
        <source>SpecChat runs the models itself, on this computer: nothing leaves it.</source>
        <translation>SpecChat fait tourner les modèles lui-même, sur cet ordinateur : rien n’en sort.</translation>
    </message>
    <message>
        <source>SpecChat sends the conversation to the server at this address and shows what it answers and what it says about its drafts. Nothing is sent anywhere else.</source>
        <translation>SpecChat envoie la conversation au serveur à cette adresse et montre ce qu’il répond et ce qu’il dit de ses brouillons. Rien n’est envoyé ailleurs.</translation>
    </message>
    <message>
        <source>The server's address: http:// or https://, a host and a port.</source>
        <translation>L’adresse du serveur : http:// ou https://, un hôte et un port.</translation>
    </message>
    <message>
        <source>(the server's only model)</source>
        <translation>(le seul modèle du serveur)</translation>
    </message>
    <message>
        <source>The model name the server knows; leave it empty when the server has one model.</source>
        <translation>Le nom du modèle que connaît le serveur ; laissez vide quand le serveur n’a qu’un modèle.</translation>
    </message>
    <message>
        <source>List models</source>
        <translation>Lister les modèles</translation>
    </message>
    <message>
        <source>Ask the server which models it serves and what it is.</source>
        <translation>Demander au serveur quels modèles il sert et ce qu’il est.</translation>
    </message>
    <message>
        <source>e.g. OPENAI_API_KEY (empty: no key)</source>
        <translation>par exemple OPENAI_API_KEY (vide : pas de clé)</translation>
    </message>
    <message>
        <source>The name of an environment variable that holds the key, for a server that wants one. SpecChat reads the key from it when connecting and never saves or logs it.</source>
        <translation>Le nom d’une variable d’environnement qui contient la clé, pour un serveur qui en demande une. SpecChat y lit la clé à la connexion et ne l’enregistre ni ne la journalise jamais.</translation>
    </message>
    <message>
        <source>(empty: the same server, with the model below)</source>
        <translation>(vide : le même serveur, avec le modèle ci-dessous)</translation>
    </message>
    <message>
        <source>Compare needs a second endpoint that does not speculate: neither llama.cpp nor vLLM turns speculation off for one request. Another server's URL, or empty for a llama.cpp router serving both variants.</source>
        <translation>Comparer demande un second point d’accès qui ne spécule pas : ni llama.cpp ni vLLM ne coupent la spéculation pour une seule requête. L’URL d’un autre serveur, ou vide pour un routeur llama.cpp qui sert les deux variantes.</translation>
    </message>
    <message>
        <source>(that server's only model)</source>
        <translation>(le seul modèle de ce serveur)</translation>
    </message>
    <message>
        <source>The plain endpoint's model name (a router's plain variant).</source>
        <translation>Le nom du modèle du point d’accès simple (la variante simple d’un routeur).</translation>
    </message>
    <message>
        <source>Run models on:</source>
        <translation>Faire tourner les modèles sur :</translation>
    </message>
    <message>
        <source>Server URL:</source>
        <translation>URL du serveur :</translation>
    </message>
    <message>
        <source>Model:</source>
        <translation>Modèle :</translation>
    </message>
    <message>
        <source>API key variable:</source>
        <translation>Variable de la clé d’API :</translation>
    </message>
    <message>
        <source>For Compare: the endpoint without speculation</source>
        <translation>Pour Comparer : le point d’accès sans spéculation</translation>
    </message>
    <message>
        <source>Plain server URL:</source>
        <translation>URL du serveur simple :</translation>
    </message>
    <message>
        <source>Plain model:</source>
        <translation>Modèle simple :</translation>
    </message>
    <message>
        <source>The plain server's URL</source>
        <translation>L’URL du serveur simple</translation>
    </message>
    <message>
        <source>This server could not be used: {0}</source>
        <translation>Ce serveur n’a pas pu être utilisé : {0}</translation>
    </message>
    <message>
        <source>Listing models is not available here.</source>
        <translation>Lister les modèles n’est pas possible ici.</translation>
    </message>
    <message>
        <source>Asking {0}…</source>
        <translation>Question posée à {0}…</translation>
    </message>
    <message>
        <source>none listed</source>
        <translation>aucun listé</translation>
    </message>
    <message>
        <source>{0} · models: {1}</source>
        <translation>{0} · modèles : {1}</translation>
    </message>
    <message>
        <source>{0} is set in this environment.</source>
        <translation>{0} est définie dans cet environnement.</translation>
    </message>
    <message>
        <source>{0} is not set in this environment: set it before connecting.</source>
        <translation>{0} n’est pas définie dans cet environnement : définissez-la avant de vous connecter.</translation>
    </message>
</context>
<context>
    <name>ServerStatus</name>
    <message>
        <source>Server: {0} · model {1}</source>
        <translation>Serveur : {0} · modèle {1}</translation>
    </message>
    <message>
        <source>speculative decoding on the server</source>
        <translation>décodage spéculatif sur le serveur</translation>
    </message>
    <message>
        <source>no speculation on the server</source>
        <translation>pas de spéculation sur le serveur</translation>
    </message>
    <message>
        <source>whether it speculates shows with the first answer</source>
        <translation>s’il spécule se verra à la première réponse</translation>
    </message>
</context>
<context>
    <name>SettingsDialog</name>
    <message>
        <source>Settings</source>
        <translation>Réglages</translation>
    </message>
    <message>
        <source>Models</source>
        <translation>Modèles</translation>
    </message>
    <message>
        <source>Server</source>
        <translation>Serveur</translation>
    </message>
    <message>
        <source>Speculation</source>
        <translation>Spéculation</translation>
    </message>
    <message>
        <source>Decoding</source>
        <translation>Décodage</translation>
    </message>
    <message>
        <source>Settings apply to the next message.</source>
        <translation>Les réglages s’appliquent au prochain message.</translation>
    </message>
    <message>
        <source>CPU threads</source>
        <translation>fils de calcul</translation>
    </message>
    <message>
        <source>temperature</source>
        <translation>température</translation>
    </message>
    <message>
        <source>max new tokens</source>
        <translation>nouveaux jetons au maximum</translation>
    </message>
    <message>
        <source>k</source>
        <translation>k</translation>
    </message>
    <message>
        <source>largest adaptive k</source>
        <translation>plus grand k adaptatif</translation>
    </message>
    <message>
        <source>repetition penalty</source>
        <translation>pénalité de répétition</translation>
    </message>
    <message>
        <source>Saved values outside what this computer or these settings allow were brought into range: {0}.</source>
        <translation>Des valeurs enregistrées hors de ce que cet ordinateur ou ces réglages permettent ont été ramenées dans les limites : {0}.</translation>
    </message>
    <message>
        <source>On this CPU ({0}) bfloat16 runs the fast kernels in bf16: half the memory of float32 and faster, with answers slightly different from float32's.</source>
        <translation>Sur ce processeur ({0}), bfloat16 fait tourner les noyaux rapides en bf16 : moitié moins de mémoire que float32 et plus rapide, avec des réponses légèrement différentes de celles de float32.</translation>
    </message>
    <message>
        <source>On this CPU ({0}) bfloat16 gains nothing: it has no bf16 matrix instructions, so the weights are computed in fp32, as fast and about as large as float32.</source>
        <translation>Sur ce processeur ({0}), bfloat16 n'apporte rien : il n'a pas d'instructions matricielles bf16, donc les poids sont calculés en fp32, aussi vite et à peu près aussi gros qu'en float32.</translation>
    </message>
    <message>
        <source>On this CPU ({0}) the fast kernels cannot run: bfloat16 halves the memory but runs on slow stock kernels.</source>
        <translation>Sur ce processeur ({0}), les noyaux rapides ne peuvent pas tourner : bfloat16 divise la mémoire par deux mais passe par les noyaux standard, lents.</translation>
    </message>
    <message>
        <source>same as target</source>
        <translation>comme le modèle cible</translation>
    </message>
    <message>
        <source>Allow pickle checkpoints (can run arbitrary code)</source>
        <translation>Autoriser les checkpoints pickle (peuvent exécuter du code arbitraire)</translation>
    </message>
    <message>
        <source>Where the models run. Only what this computer has is listed; auto picks a GPU if there is one.</source>
        <translation>Où s’exécutent les modèles. Seul ce dont dispose cet ordinateur est listé ; auto choisit un GPU s’il y en a un.</translation>
    </message>
    <message>
        <source>How precisely the weights are held in memory. auto: the usual choice for the device; float16 and bfloat16 use half the memory of float32.</source>
        <translation>Précision avec laquelle les poids sont conservés en mémoire. auto : le choix habituel pour le processeur ; float16 et bfloat16 utilisent deux fois moins de mémoire que float32.</translation>
    </message>
    <message>
        <source>auto (the fastest exact form, measured at load)</source>
        <translation>auto (la forme exacte la plus rapide, mesurée au chargement)</translation>
    </message>
    <message>
        <source>int4 (weight-only, smallest)</source>
        <translation>int4 (poids quantifiés, le plus petit)</translation>
    </message>
    <message>
        <source>int8 (weight-only)</source>
        <translation>int8 (poids quantifiés)</translation>
    </message>
    <message>
        <source>The form the target's weights are computed in. int4 and int8 keep the weights quantized (a float model is quantized by SpecChat at load) and compute the rest in bf16; bf16 and fp32 keep them as floats. Every form offered here is exact: a verified block gives the same logits as one-token decoding, so speculation never changes the answer. auto times the forms at load and keeps the fastest (the status bar says which). With auto, a data type other than auto decides instead.</source>
        <translation>La forme dans laquelle les poids de la cible sont calculés. int4 et int8 gardent les poids quantifiés (un modèle en flottants est quantifié par SpecChat au chargement) et calculent le reste en bf16 ; bf16 et fp32 les gardent en flottants. Chaque forme proposée ici est exacte : un bloc vérifié donne les mêmes logits que le décodage jeton par jeton, donc la spéculation ne change jamais la réponse. auto chronomètre les formes au chargement et garde la plus rapide (la barre d'état dit laquelle). Avec auto, un type de données autre qu'auto décide à sa place.</translation>
    </message>
    <message>
        <source>auto (the cheapest draft step, measured at load)</source>
        <translation>auto (le pas de brouillon le moins cher, mesuré au chargement)</translation>
    </message>
    <message>
        <source>The draft model's weights form. auto: on the CPU, the draft is built in each exact form (int4, int8, bf16, fp32), a few draft steps of each are timed, and the cheapest is kept (the status bar says which). int4 and int8 make the draft smaller and usually faster; the answer does not change, because the target checks every drafted token.</source>
        <translation>La forme des poids du modèle brouillon. auto : sur le CPU, le brouillon est construit dans chaque forme exacte (int4, int8, bf16, fp32), quelques pas de brouillon de chacune sont chronométrés et la moins chère est gardée (la barre d'état dit laquelle). int4 et int8 rendent le brouillon plus petit et en général plus rapide ; la réponse ne change pas, car la cible vérifie chaque jeton proposé.</translation>
    </message>
    <message>
        <source>Old .bin and .pt checkpoints are Python pickles, which can run code when opened. Only tick this for files you trust; .safetensors and .gguf files never need it.</source>
        <translation>Les anciens checkpoints .bin et .pt sont des pickles Python, qui peuvent exécuter du code à l’ouverture. Ne cochez cette case que pour des fichiers de confiance ; les fichiers .safetensors et .gguf n’en ont jamais besoin.</translation>
    </message>
    <message>
        <source>Target model:</source>
        <translation>Modèle cible :</translation>
    </message>
    <message>
        <source>Draft source:</source>
        <translation>Source du brouillon :</translation>
    </message>
    <message>
        <source>The drafter guesses a few tokens ahead and the target model checks them all at once. Prompt lookup needs no second model: it copies words from the conversation.</source>
        <translation>Le brouillon devine quelques jetons à l’avance et le modèle cible les vérifie tous d’un coup. La recherche dans le prompt ne nécessite pas de second modèle : elle copie des mots de la conversation.</translation>
    </message>
    <message>
        <source>Device:</source>
        <translation>Processeur :</translation>
    </message>
    <message>
        <source>Data type:</source>
        <translation>Type de données :</translation>
    </message>
    <message>
        <source>Weights form:</source>
        <translation>Forme des poids :</translation>
    </message>
    <message>
        <source>Draft data type:</source>
        <translation>Type de données du brouillon :</translation>
    </message>
    <message>
        <source>Fast exact CPU kernels (prepacked linears, row-wise attention)</source>
        <translation>Noyaux CPU rapides et exacts (couches linéaires préempaquetées, attention ligne par ligne)</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>auto</translation>
    </message>
    <message>
        <source>Faster ways to run the models on the CPU (weights packed ahead of time, attention computed row by row). The results are exactly the same, only sooner.</source>
        <translation>Des façons plus rapides d’exécuter les modèles sur le CPU (poids empaquetés à l’avance, attention calculée ligne par ligne). Les résultats sont exactement les mêmes, simplement obtenus plus tôt.</translation>
    </message>
    <message>
        <source>How many CPU cores the models use. auto: starts at the physical cores minus one, so the window stays responsive, then, between answers, takes the cores other programs leave idle, and only as many as measured faster. At most the {0} CPUs of this computer: more threads only take turns on them, far slower. A draft model shares them with the target: it drafts ahead on one of its own, or in turn on all of them, whichever measured faster.</source>
        <translation>Combien de cœurs de processeur les modèles utilisent. auto : commence avec les cœurs physiques moins un, pour que la fenêtre reste réactive, puis, entre les réponses, prend les cœurs que les autres programmes laissent libres, et seulement autant que mesuré plus rapide. Au plus les {0} processeurs de cet ordinateur : davantage de fils ne font que se relayer sur eux, bien plus lentement. Un modèle de brouillon les partage avec le modèle cible : il rédige en avance sur un fil à lui, ou à tour de rôle sur tous, selon ce qui a été mesuré plus rapide.</translation>
    </message>
    <message>
        <source>CPU threads:</source>
        <translation>Threads CPU :</translation>
    </message>
    <message>
        <source>Changing a model reloads it in the background; the chat stays usable.</source>
        <translation>Changer de modèle le recharge en arrière-plan ; la conversation reste utilisable.</translation>
    </message>
    <message>
        <source>Use speculative decoding</source>
        <translation>Utiliser le décodage spéculatif</translation>
    </message>
    <message>
        <source>Choose k automatically (at most k; 0 when drafting does not pay)</source>
        <translation>Choisir k automatiquement (au plus k ; 0 quand le brouillon n’est pas rentable)</translation>
    </message>
    <message>
        <source>SpecChat measures what checking 1, 2, 3… guessed tokens costs on your computer and how often the guesses are right, and each step guesses as many tokens as pay off, none when drafting would only slow the answer down. k above is then the most it guesses.</source>
        <translation>SpecChat mesure ce que coûte sur votre ordinateur la vérification de 1, 2, 3… jetons devinés et la fréquence à laquelle les prédictions sont justes, puis devine à chaque étape autant de jetons que c’est rentable, aucun quand le brouillon ne ferait que ralentir la réponse. Le k ci-dessus est alors le maximum deviné.</translation>
    </message>
    <message>
        <source>Adapt the draft length (grow on success, shrink on rejection)</source>
        <translation>Adapter la longueur du brouillon (plus long en cas de succès, plus court en cas de rejet)</translation>
    </message>
    <message>
        <source>Learn from earlier conversations</source>
        <translation>Apprendre des conversations antérieures</translation>
    </message>
    <message>
        <source>The “earlier conversations” drafter indexes the saved chats in memory, on this computer only; a deleted chat is forgotten with it. Off: it learns from none and forgets what it held.</source>
        <translation>Le brouillon « conversations antérieures » indexe en mémoire les discussions enregistrées, sur cet ordinateur seulement ; une discussion supprimée est oubliée avec elle. Désactivé : il n’apprend d’aucune et oublie ce qu’il gardait.</translation>
    </message>
    <message>
        <source>A fast drafter guesses the next few tokens and the target model checks them all in one step, keeping those it would have written itself. Same answer, usually sooner.</source>
        <translation>Un brouillon rapide devine les quelques jetons suivants et le modèle cible les vérifie tous en une seule étape, en gardant ceux qu’il aurait écrits lui-même. Même réponse, généralement plus tôt.</translation>
    </message>
    <message>
        <source>k: how many tokens the drafter guesses before the target checks them. A larger k pays off when the guesses are usually right, and wastes work when they are not.</source>
        <translation>k : le nombre de jetons que le brouillon devine avant que le modèle cible ne les vérifie. Un k plus grand est rentable quand les prédictions sont généralement justes, et gaspille du travail sinon.</translation>
    </message>
    <message>
        <source>Change k as the answer goes: longer after a fully accepted guess, shorter after a miss.</source>
        <translation>Ajuster k au fil de la réponse : plus long après une prédiction entièrement acceptée, plus court après un échec.</translation>
    </message>
    <message>
        <source>The longest guess the adaptive k may grow to.</source>
        <translation>La prédiction la plus longue que le k adaptatif peut atteindre.</translation>
    </message>
    <message>
        <source>The draft model stops drafting when its most likely next token has a probability below this, so the target is not asked to check weak guesses. 0: off. It changes the speed, never the answer.</source>
        <translation>Le modèle brouillon s’arrête quand la probabilité de son jeton suivant le plus probable est inférieure à ce seuil, pour que le modèle cible n’ait pas à vérifier des prédictions peu sûres. 0 : désactivé. Cela change la vitesse, jamais la réponse.</translation>
    </message>
    <message>
        <source>Speculation changes only the speed: the answer is the one the target model alone would give.</source>
        <translation>La spéculation ne change que la vitesse : la réponse est celle que donnerait le modèle cible seul.</translation>
    </message>
    <message>
        <source>Draft length k:</source>
        <translation>Longueur du brouillon k :</translation>
    </message>
    <message>
        <source>Largest adaptive k:</source>
        <translation>k adaptatif maximal :</translation>
    </message>
    <message>
        <source>Confidence threshold:</source>
        <translation>Seuil de confiance :</translation>
    </message>
    <message>
        <source>A draft model stops drafting when its most likely next token is less probable than the threshold (0: off).</source>
        <translation>Un modèle brouillon s’arrête quand son jeton suivant le plus probable est moins probable que le seuil (0 : désactivé).</translation>
    </message>
    <message>
        <source>Greedy (always the most likely token)</source>
        <translation>Glouton (toujours le jeton le plus probable)</translation>
    </message>
    <message>
        <source>Sampling</source>
        <translation>Échantillonnage</translation>
    </message>
    <message>
        <source>Standard (same distribution as the target)</source>
        <translation>Standard (même distribution que le modèle cible)</translation>
    </message>
    <message>
        <source>Seed-invariant (same text per seed, with or without speculation)</source>
        <translation>Invariant par graine (même texte pour une graine, avec ou sans spéculation)</translation>
    </message>
    <message>
        <source>Always take the most likely next token: the same question gets the same answer.</source>
        <translation>Toujours prendre le jeton suivant le plus probable : une même question obtient la même réponse.</translation>
    </message>
    <message>
        <source>Pick each next token at random, weighted by the model's probabilities: more varied answers.</source>
        <translation>Choisir chaque jeton suivant au hasard, pondéré par les probabilités du modèle : des réponses plus variées.</translation>
    </message>
    <message>
        <source>How adventurous sampling is: below 1 sticks to likely words, above 1 takes more chances.</source>
        <translation>Degré d’audace de l’échantillonnage : en dessous de 1, il s’en tient aux mots probables ; au-dessus de 1, il prend plus de risques.</translation>
    </message>
    <message>
        <source>Sample only among the most likely tokens whose probabilities add up to this (1: no limit).</source>
        <translation>Échantillonner uniquement parmi les jetons les plus probables dont les probabilités cumulées atteignent cette valeur (1 : sans limite).</translation>
    </message>
    <message>
        <source>Sample only among this many most likely tokens (0: no limit).</source>
        <translation>Échantillonner uniquement parmi ce nombre de jetons les plus probables (0 : sans limite).</translation>
    </message>
    <message>
        <source>The random seed: the same seed and settings give the same sampled answer again.</source>
        <translation>La graine aléatoire : la même graine et les mêmes réglages redonnent la même réponse échantillonnée.</translation>
    </message>
    <message>
        <source>Answers follow exactly the target model's probabilities; with speculation a seed may give another text.</source>
        <translation>Les réponses suivent exactement les probabilités du modèle cible ; avec la spéculation, une graine peut donner un autre texte.</translation>
    </message>
    <message>
        <source>A seed gives the same text with or without speculation and for any k: handy to compare speeds.</source>
        <translation>Une graine donne le même texte avec ou sans spéculation et pour tout k : pratique pour comparer les vitesses.</translation>
    </message>
    <message>
        <source>Seed-invariant sampling: the same seed gives the same answer whether speculation is on or off, so you can compare speeds on the very same text. Standard: the same kind of answers, but a seed may give a different text with speculation.</source>
        <translation>Échantillonnage invariant par graine : la même graine donne la même réponse, que la spéculation soit activée ou non, ce qui permet de comparer les vitesses sur exactement le même texte. Standard : le même genre de réponses, mais une graine peut donner un texte différent avec la spéculation.</translation>
    </message>
    <message>
        <source>The longest answer, in tokens (a token is a word or a piece of a word).</source>
        <translation>La réponse la plus longue, en jetons (un jeton est un mot ou un morceau de mot).</translation>
    </message>
    <message>
        <source>Makes the model less likely to repeat words already in the conversation (1.00: off; around 1.1 to 1.3 is typical). It is applied identically to the target and the draft, so speculation still gives exactly the same answer.</source>
        <translation>Rend le modèle moins enclin à répéter des mots déjà présents dans la conversation (1.00 : désactivé ; 1.1 à 1.3 environ est courant). Elle s’applique de la même façon au modèle cible et au brouillon : la spéculation donne donc toujours exactement la même réponse.</translation>
    </message>
    <message>
        <source>Temperature:</source>
        <translation>Température :</translation>
    </message>
    <message>
        <source>Top-p:</source>
        <translation>Top-p :</translation>
    </message>
    <message>
        <source>Top-k (0: off):</source>
        <translation>Top-k (0 : désactivé) :</translation>
    </message>
    <message>
        <source>Seed:</source>
        <translation>Graine :</translation>
    </message>
    <message>
        <source>Sampling mode:</source>
        <translation>Mode d’échantillonnage :</translation>
    </message>
    <message>
        <source>Max new tokens:</source>
        <translation>Nouveaux jetons au maximum :</translation>
    </message>
    <message>
        <source>Repetition penalty:</source>
        <translation>Pénalité de répétition :</translation>
    </message>
    <message>
        <source>1.00: off. Above 1, words already used become less likely.</source>
        <translation>1.00 : désactivée. Au-dessus de 1, les mots déjà utilisés deviennent moins probables.</translation>
    </message>
    <message>
        <source>Automatic (system)</source>
        <translation>Automatique (système)</translation>
    </message>
    <message>
        <source>The language of the window. It changes the next time SpecChat starts.</source>
        <translation>La langue de la fenêtre. Elle change au prochain démarrage de SpecChat.</translation>
    </message>
    <message>
        <source>Language:</source>
        <translation>Langue :</translation>
    </message>
    <message>
        <source>(applies at the next start)</source>
        <translation>(prend effet au prochain démarrage)</translation>
    </message>
    <message>
        <source>{0} (not available here)</source>
        <translation>{0} (non disponible ici)</translation>
    </message>
    <message>
        <source>target model</source>
        <translation>modèle cible</translation>
    </message>
    <message>
        <source>draft source</source>
        <translation>source du brouillon</translation>
    </message>
    <message>
        <source>Choose a path or model id for the {0}.</source>
        <translation>Choisissez un chemin ou un identifiant de modèle pour : {0}.</translation>
    </message>
    <message>
        <source>These models could not be loaded: {0}</source>
        <translation>Ces modèles n’ont pas pu être chargés : {0}</translation>
    </message>
</context>
<context>
    <name>Stats</name>
    <message>
        <source>{0} new tokens</source>
        <translation>{0} nouveaux jetons</translation>
    </message>
    <message>
        <source>{0} tokens/s</source>
        <translation>{0} jetons/s</translation>
    </message>
    <message>
        <source>first token after {0} s</source>
        <translation>premier jeton après {0} s</translation>
    </message>
    <message>
        <source>drafts accepted {0}</source>
        <translation>brouillons acceptés {0}</translation>
    </message>
    <message>
        <source>{0} tokens per target pass</source>
        <translation>{0} jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>{0} target passes ({1} saved vs one per token)</source>
        <translation>{0} passes du modèle cible ({1} économisées par rapport à une par jeton)</translation>
    </message>
    <message>
        <source>on the server {0}</source>
        <translation>sur le serveur {0}</translation>
    </message>
    <message>
        <source>with the server's speculation</source>
        <translation>avec la spéculation du serveur</translation>
    </message>
    <message>
        <source>no speculation</source>
        <translation>sans spéculation</translation>
    </message>
    <message>
        <source>no model loaded</source>
        <translation>aucun modèle chargé</translation>
    </message>
    <message>
        <source>with speculation ({0})</source>
        <translation>avec spéculation ({0})</translation>
    </message>
    <message>
        <source>target model only, no speculation</source>
        <translation>modèle cible seul, sans spéculation</translation>
    </message>
    <message>
        <source>Stopped: the answer is partial.</source>
        <translation>Arrêtée : la réponse est partielle.</translation>
    </message>
    <message>
        <source>Reached the max new tokens limit.</source>
        <translation>Limite de nouveaux jetons atteinte.</translation>
    </message>
    <message>
        <source>The context window is full: the answer was cut. Start a new chat to continue.</source>
        <translation>La fenêtre de contexte est pleine : la réponse a été tronquée. Commencez une nouvelle conversation pour continuer.</translation>
    </message>
    <message>
        <source>Context: {0} tokens</source>
        <translation>Contexte : {0} jetons</translation>
    </message>
    <message>
        <source>Context: {0} of {1} tokens ({2})</source>
        <translation>Contexte : {0} jetons sur {1} ({2})</translation>
    </message>
    <message>
        <source>The conversation fills {0} of the context window: start a new chat soon, or the next answers will be cut.</source>
        <translation>La conversation occupe {0} de la fenêtre de contexte : commencez bientôt une nouvelle conversation, sinon les prochaines réponses seront tronquées.</translation>
    </message>
    <message>
        <source>The context window is full: start a new chat (answers here will be cut).</source>
        <translation>La fenêtre de contexte est pleine : commencez une nouvelle conversation (les réponses ici seront tronquées).</translation>
    </message>
</context>
<context>
    <name>SweepDialog</name>
    <message>
        <source>Try drafters</source>
        <translation>Essayer des brouillons</translation>
    </message>
    <message>
        <source>Answers the same conversation again without speculation, then with each drafter at each k, every run from fresh caches. The plain run is the reference for speed and for “same answer”.</source>
        <translation>Répond de nouveau à la même conversation sans spéculation, puis avec chaque brouillon pour chaque k, chaque exécution partant de caches neufs. L’exécution simple sert de référence pour la vitesse et pour « même réponse ».</translation>
    </message>
    <message>
        <source>Prompt lookup</source>
        <translation>Recherche dans le prompt</translation>
    </message>
    <message>
        <source>Draft model: {0}</source>
        <translation>Modèle brouillon : {0}</translation>
    </message>
    <message>
        <source>Draft model (none loaded)</source>
        <translation>Modèle brouillon (aucun chargé)</translation>
    </message>
    <message>
        <source>Draft lengths to try, separated by commas; “auto” lets SpecChat choose k each step.</source>
        <translation>Longueurs de brouillon à essayer, séparées par des virgules ; « auto » laisse SpecChat choisir k à chaque étape.</translation>
    </message>
    <message>
        <source>Run</source>
        <translation>Lancer</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Annuler</translation>
    </message>
    <message>
        <source>Drafter</source>
        <translation>Brouillon</translation>
    </message>
    <message>
        <source>Tokens/s</source>
        <translation>Jetons/s</translation>
    </message>
    <message>
        <source>Decode speed-up</source>
        <translation>Accélération du décodage</translation>
    </message>
    <message>
        <source>Whole-run speed-up</source>
        <translation>Accélération de l’exécution entière</translation>
    </message>
    <message>
        <source>Tokens per target pass</source>
        <translation>Jetons par passe du modèle cible</translation>
    </message>
    <message>
        <source>The chart appears when the first drafting run ends.</source>
        <translation>Le graphique apparaît à la fin de la première exécution avec brouillon.</translation>
    </message>
    <message>
        <source>same</source>
        <translation>identique</translation>
    </message>
    <message>
        <source>Done. Fastest: {0} (decode speed-up {1}).</source>
        <translation>Terminé. Le plus rapide : {0} (accélération du décodage {1}).</translation>
    </message>
    <message>
        <source>Acceptance α</source>
        <translation>Acceptation α</translation>
    </message>
    <message>
        <source>Earlier conversations</source>
        <translation>Conversations antérieures</translation>
    </message>
    <message>
        <source>Prompt lookup plus what followed the same words in earlier conversations</source>
        <translation>La recherche dans le prompt, plus ce qui suivait les mêmes mots dans les conversations antérieures</translation>
    </message>
    <message>
        <source>Drafts accepted</source>
        <translation>Brouillons acceptés</translation>
    </message>
    <message>
        <source>Answer</source>
        <translation>Réponse</translation>
    </message>
    <message>
        <source>k:</source>
        <translation>k :</translation>
    </message>
    <message>
        <source>Close the experiment (a run in progress stops)</source>
        <translation>Fermer l’expérience (une exécution en cours s’arrête)</translation>
    </message>
    <message>
        <source>differs from token {0}</source>
        <translation>diffère à partir du jeton {0}</translation>
    </message>
    <message>
        <source>{0} of {1} runs done</source>
        <translation>{0} exécutions sur {1} terminées</translation>
    </message>
    <message>
        <source>Running the plain reference…</source>
        <translation>Exécution de la référence simple…</translation>
    </message>
    <message>
        <source>The experiment stopped: {0}</source>
        <translation>L’expérience s’est arrêtée : {0}</translation>
    </message>
    <message>
        <source>Cancelled after {0} of {1} runs.</source>
        <translation>Annulé après {0} exécutions sur {1}.</translation>
    </message>
    <message>
        <source>no speculation</source>
        <translation>sans spéculation</translation>
    </message>
    <message>
        <source>prompt lookup</source>
        <translation>recherche dans le prompt</translation>
    </message>
    <message>
        <source>earlier conversations</source>
        <translation>conversations antérieures</translation>
    </message>
    <message>
        <source>draft model</source>
        <translation>modèle brouillon</translation>
    </message>
    <message>
        <source>auto</source>
        <translation>auto</translation>
    </message>
    <message>
        <source>{0}, k = {1}</source>
        <translation>{0}, k = {1}</translation>
    </message>
    <message>
        <source>Choose at least one drafter.</source>
        <translation>Choisissez au moins un brouillon.</translation>
    </message>
    <message>
        <source>k values: whole numbers from 1 to 64 or “auto”, separated by commas.</source>
        <translation>Valeurs de k : nombres entiers de 1 à 64 ou « auto », séparés par des virgules.</translation>
    </message>
    <message>
        <source>Cancelling…</source>
        <translation>Annulation…</translation>
    </message>
</context>
<context>
    <name>TokenLegend</name>
    <message>
        <source>Legend:</source>
        <translation>Légende :</translation>
    </message>
    <message>
        <source>Hover a token for its source, pass and probabilities.</source>
        <translation>Survolez un jeton pour voir sa source, sa passe et ses probabilités.</translation>
    </message>
    <message>
        <source>The same in the rendered answer and in the Tokens view. A rendered answer does not show its Markdown syntax (**, #, backticks, list markers), so the part of a token made of it has no highlight; Tokens shows every token as generated.</source>
        <translation>Identique dans la réponse mise en forme et dans la vue Jetons. Une réponse mise en forme n’affiche pas sa syntaxe Markdown (**, #, accents graves, puces de liste) : la partie d’un jeton qui en est faite n’est pas surlignée ; Jetons montre chaque jeton tel qu’il a été généré.</translation>
    </message>
    <message>
        <source>accepted draft token (underlined)</source>
        <translation>jeton du brouillon accepté (souligné)</translation>
    </message>
    <message>
        <source>token from the target model</source>
        <translation>jeton du modèle cible</translation>
    </message>
    <message>
        <source>rejected draft (struck through)</source>
        <translation>brouillon rejeté (barré)</translation>
    </message>
    <message>
        <source>not known: the server did not say (dotted)</source>
        <translation>inconnu : le serveur ne l’a pas dit (pointillés)</translation>
    </message>
</context>
<context>
    <name>TokenTextView</name>
    <message>
        <source>Draft token, accepted by the target in pass {0}</source>
        <translation>Jeton du brouillon, accepté par le modèle cible à la passe {0}</translation>
    </message>
    <message>
        <source>Draft token proposed before pass {0}, rejected by the target</source>
        <translation>Jeton du brouillon proposé avant la passe {0}, rejeté par le modèle cible</translation>
    </message>
    <message>
        <source>Token from the server: whether a draft guessed it is not known (the server did not say)</source>
        <translation>Jeton du serveur : on ne sait pas si un brouillon l’a deviné (le serveur ne l’a pas dit)</translation>
    </message>
    <message>
        <source>Target token, from target pass {0}</source>
        <translation>Jeton du modèle cible, issu de la passe {0}</translation>
    </message>
    <message>
        <source>Guessed from an earlier conversation</source>
        <translation>Deviné d’après une conversation antérieure</translation>
    </message>
    <message>
        <source>Guessed from this conversation</source>
        <translation>Deviné d’après cette conversation</translation>
    </message>
    <message>
        <source>Text: {0}</source>
        <translation>Texte : {0}</translation>
    </message>
    <message>
        <source>Target probability: {0}</source>
        <translation>Probabilité selon le modèle cible : {0}</translation>
    </message>
    <message>
        <source>Draft probability: {0}</source>
        <translation>Probabilité selon le brouillon : {0}</translation>
    </message>
    <message>
        <source>Target top-1 margin (logits): {0}</source>
        <translation>Marge du meilleur jeton du modèle cible (logits) : {0}</translation>
    </message>
</context>
<context>
    <name>Units</name>
    <message>
        <source>{0}B</source>
        <comment>billions of parameters</comment>
        <translation>{0} Md</translation>
    </message>
    <message>
        <source>{0}M</source>
        <comment>millions of parameters</comment>
        <translation>{0} M</translation>
    </message>
    <message>
        <source>{0}K</source>
        <comment>thousands of parameters</comment>
        <translation>{0} k</translation>
    </message>
    <message>
        <source>{0} B</source>
        <comment>bytes</comment>
        <translation>{0} o</translation>
    </message>
    <message>
        <source>{0} KB</source>
        <comment>kilobytes</comment>
        <translation>{0} ko</translation>
    </message>
    <message>
        <source>{0} MB</source>
        <comment>megabytes</comment>
        <translation>{0} Mo</translation>
    </message>
    <message>
        <source>{0} GB</source>
        <comment>gigabytes</comment>
        <translation>{0} Go</translation>
    </message>
</context>
<context>
    <name>UserMessageWidget</name>
    <message>
        <source>You</source>
        <translation>Vous</translation>
    </message>
    <message>
        <source>Edit</source>
        <translation>Modifier</translation>
    </message>
    <message>
        <source>Change this message and send it again (later messages are replaced)</source>
        <translation>Modifier ce message et le renvoyer (les messages suivants sont remplacés)</translation>
    </message>
    <message>
        <source>Send</source>
        <translation>Envoyer</translation>
    </message>
    <message>
        <source>Cancel</source>
        <translation>Annuler</translation>
    </message>
</context>
<context>
    <name>catalog</name>
    <message>
        <source>These two models share a tokenizer: the draft can be used.</source>
        <translation>Ces deux modèles partagent un tokeniseur : le brouillon peut être utilisé.</translation>
    </message>
    <message>
        <source>These two models use different tokenizers.</source>
        <translation>Ces deux modèles utilisent des tokeniseurs différents.</translation>
    </message>
    <message>
        <source>The draft's vocabulary is larger than the target's: it could propose tokens the target does not know.</source>
        <translation>Le vocabulaire du brouillon est plus grand que celui du modèle cible : il pourrait proposer des jetons que le modèle cible ne connaît pas.</translation>
    </message>
    <message>
        <source>The draft's vocabulary is smaller than the target's: their tokenizers are related but not the same.</source>
        <translation>Le vocabulaire du brouillon est plus petit que celui du modèle cible : leurs tokeniseurs sont apparentés mais pas identiques.</translation>
    </message>
    <message>
        <source>The two vocabularies hold the same words, but some have different numbers.</source>
        <translation>Les deux vocabulaires contiennent les mêmes mots, mais certains ont des numéros différents.</translation>
    </message>
    <message>
        <source>The two tokenizers split the same text into different tokens.</source>
        <translation>Les deux tokeniseurs découpent le même texte en jetons différents.</translation>
    </message>
    <message>
        <source>The two models end an answer with different tokens.</source>
        <translation>Les deux modèles terminent une réponse par des jetons différents.</translation>
    </message>
    <message>
        <source>The tokenizer of one of the two models could not be read.</source>
        <translation>Le tokeniseur de l’un des deux modèles n’a pas pu être lu.</translation>
    </message>
    <message>
        <source>Compatible</source>
        <translation>Compatible</translation>
    </message>
    <message>
        <source>Different tokenizer</source>
        <translation>Tokeniseur différent</translation>
    </message>
    <message>
        <source>Larger vocabulary</source>
        <translation>Vocabulaire plus grand</translation>
    </message>
    <message>
        <source>Smaller vocabulary</source>
        <translation>Vocabulaire plus petit</translation>
    </message>
    <message>
        <source>Different token ids</source>
        <translation>Identifiants de jetons différents</translation>
    </message>
    <message>
        <source>Splits text differently</source>
        <translation>Découpe le texte différemment</translation>
    </message>
    <message>
        <source>Different end token</source>
        <translation>Jeton de fin différent</translation>
    </message>
    <message>
        <source>Tokenizer unreadable</source>
        <translation>Tokeniseur illisible</translation>
    </message>
</context>
</TS>
